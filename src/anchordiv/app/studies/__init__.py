"""The paper's studies, in kind, on real offline text (README "Studies and the main job").

Each study is a function returning tidy rows (or a :class:`~anchordiv.evaluation.curves.Curve`) and a
report section; :func:`run_demo` runs them all as ``anchordiv demo``.

- :mod:`.clinical` — Open-i report retrieval per finding with pathology anchors (Table 2);
- :mod:`.object_style` — object vs style items, q_p = p·q_obj + (1−p)·q_style (Fig. 3);
- :mod:`.budget` — softmax vs parametric as anchor coverage grows (Fig. 4);
- :mod:`.wordnet_imagenet` — WordNet → ImageNet adaptation curve (Fig. 5);
- :mod:`.priors` — the broad priors shipped in ``models/`` and ``anchordiv build-models``;
- :mod:`.transfer` — which broad prior helps few target anchors (style, clinical), diagnostics;
- :mod:`.main_job` — the demo: sizes, the report.
"""

from . import transfer
from .budget import budget_rows, coverage
from .clinical import clinical_study, negated_mentions
from .main_job import SIZES, run_demo
from .object_style import object_style_study, object_style_task
from .priors import load_prior, prior_spec
from .wordnet_imagenet import (
    broad_from_model,
    broad_pool,
    wordnet_imagenet_study,
    wordnet_imagenet_task,
)

__all__ = [
    "SIZES",
    "broad_from_model",
    "broad_pool",
    "budget_rows",
    "clinical_study",
    "coverage",
    "load_prior",
    "negated_mentions",
    "object_style_study",
    "object_style_task",
    "prior_spec",
    "run_demo",
    "transfer",
    "wordnet_imagenet_study",
    "wordnet_imagenet_task",
]
