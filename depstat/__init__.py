"""depstat: how far dependencies reach in a corpus, measured as MI profiles over token offsets."""

import os

# Idle OpenMP threads sleep instead of spinning: on a shared machine, spinning threads
# slowed the parallel kernels down by 10-60x (measured; see docs/estimators.md).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from depstat.analysis.result import Analysis, Settings, analyze, compare_lengths  # noqa: E402
from depstat.errors import DepstatError  # noqa: E402
from depstat.estimate.estimators import DEFAULT_ESTIMATOR, ESTIMATORS  # noqa: E402
from depstat.estimate.profile import GranularityFacts, Profile, log_offsets, mi_profile  # noqa: E402
from depstat.io.corpus import Corpus, Document, open_corpus  # noqa: E402
from depstat.pipeline import profile  # noqa: E402
from depstat.tokenize.stream import TokenStream  # noqa: E402
from depstat.version import __version__  # noqa: E402

__all__ = [
    "Analysis", "Corpus", "DEFAULT_ESTIMATOR", "DepstatError", "Document", "ESTIMATORS", "GranularityFacts", "Profile",
    "TokenStream", "__version__", "log_offsets", "mi_profile", "open_corpus", "profile", "Settings", "analyze", "compare_lengths",
]
