"""The paper's studies, in kind, on real offline text (README "Studies and the main job"): each a
function returning tidy rows (or a :class:`~anchordiv.evaluation.curves.Curve`) and a report
section; :func:`run_demo` runs them all as ``anchordiv demo``."""

from . import transfer
from .budget import budget_rows, coverage
from .clinical import clinical_study, negated_mentions
from .images import run_image_study, shown
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
    "run_image_study",
    "shown",
    "transfer",
    "wordnet_imagenet_study",
    "wordnet_imagenet_task",
]
