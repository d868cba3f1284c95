"""The user's family as a module that registers it on import, for ``anchordiv adapt KIND
--family tests/adaptation/userfam/cli_family.py:FixedCovariancePrior``."""

import anchordiv as ad
from userfam.user_family import KIND, define

FixedCovariancePrior = ad.family(KIND)(define())
