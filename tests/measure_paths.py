"""Print the issue-46 path budget: files, cross-module calls and module entries of the traced
``ad.adapt("gaussian", ...)`` and ``ad.infer(prior, targets, method=NUTS(...))`` calls (d = 32,
warm).  Run: ``PYTHONPATH=src:tests python tests/measure_paths.py [adapt|infer|top_k]``."""

import sys

from test_internals_doc import _adapt, _infer, _top_k
from tracing import trace

MAKERS = {"adapt": _adapt, "infer": _infer, "top_k": _top_k}

for name in sys.argv[1:] or ["adapt", "infer"]:
    call = MAKERS[name]()
    call()
    t = trace(call)
    over = {f: n for f, n in t.entries.items() if f.startswith("adaptation/") and n > 2}
    print(f"== {name}: {len(t.files)} files, {t.cross} cross-module calls")
    print("   files:", " ".join(sorted(t.files)))
    print("   entries:", dict(t.entries.most_common()))
    print("   adaptation modules entered > 2x:", over or "none")
