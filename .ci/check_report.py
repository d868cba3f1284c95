"""CI: the main job's report has every section and the dominance rows of every posterior.

    .venv/bin/python .ci/check_report.py reports/demo

Exits 1 listing what is missing (``anchordiv.app.studies.main_job.check_report``: the sections
of every study the demo runs — the same at every size —, and the WordNet → ImageNet dominance
rows of every posterior model, spectral included), 0 with one line when the report is complete.
"""

import sys

from anchordiv.app.studies.main_job import check_report

out = sys.argv[1] if len(sys.argv) > 1 else "reports/demo"
problems = check_report(out)
for line in problems:
    print(f"{out}: {line}", file=sys.stderr)
if problems:
    sys.exit(1)
print(f"{out}/report.md: every section and dominance row is there")
