"""Numba counting kernels: the sums over count tables that every MI estimator needs,
one module a job (``common``, ``emit``, ``partition``, ``marginals``, ``sweep``, ``dense``, ``pieces``).

For an offset ``r`` the pairs of the concatenated tokens ``tok`` are ``(tok[p], partner(p))``
for every position ``p`` whose document has ``r`` tokens after it. Small vocabularies are counted
into whole V x V tables per jackknife block (``dense_counts``, ``dense_table_sums``); larger ones
write the pairs, in position order, into partitions of first tokens (``emit_pairs``) and count
each token's partners in a dense array of length V (``partition_sums``): memory O(N + V). The
Dask engine emits a shard's tables instead (``emit_block``, ``partition_tables``).

For each table the kernels return three sums, from which all estimators are built:
``sum n ln n`` (plug-in), ``sum n G(n)`` (Grassberger 2003) and the number of occupied
cells (Miller-Madow). Alongside, for each jackknife block ``g`` they return how much each
sum changes when the pairs whose first position lies in ``g`` are deleted, so a
delete-one-block jackknife costs one more pass instead of G re-counts.

Partners: ``MODE_REAL`` is ``tok[p + r]``; ``MODE_ROTATE`` is
``tok[(p + shift + jitter) % N]``, a partner from far away in the corpus that keeps the
partner stream's own autocorrelation (the null used for bias correction). It is the same
at every offset, so an offset's null table is the previous offset's less the pairs that offset
drops at document ends: ``null_sweep_sums`` counts it once and follows those deletions. The
jitter (a random 0..4095 redrawn every 4096 positions) keeps documents of equal length from
lining up with their partners, which would give the null real information; ``MODE_IID`` draws
the partner by a hash of ``(p, seed)``, an i.i.d. null kept for comparison.
"""

import hashlib
from pathlib import Path

from numba.core.dispatcher import Dispatcher

from depstat.count.kernels import (
    common,
    dense,
    emit,
    marginals,
    partition,
    pieces,
    sweep,
)
from depstat.count.kernels.common import (
    DENSE_RANGE_CELLS,
    MODE_IID,
    MODE_PAIRS,
    MODE_REAL,
    MODE_ROTATE,
    N_CHUNKS,
    N_SUMS,
    NO_LAYOUT,
    PREFETCH_AHEAD,
    SHARD_PART,
    SUM_TABLES,
    TABLE_SIZE,
    relabel,
    token_counts,
)
from depstat.count.kernels.dense import (
    count_deltas,
    count_sums,
    dense_counts,
    dense_table_sums,
)
from depstat.count.kernels.emit import (
    XLOC_BITS,
    XLOC_MASK,
    Emitted,
    Slots,
    Source,
    emit_block,
    emit_pairs,
    partition_layout,
    partition_tokens,
)
from depstat.count.kernels.marginals import move_partners, partner_runs, row_sums
from depstat.count.kernels.partition import (
    CELL_TOTAL,
    LISTED_PAIRS,
    NOTE_BLOCKS,
    NOTE_PAIRS,
    partition_sums,
)
from depstat.count.kernels.pieces import (
    dense_range_tables,
    merge_pieces,
    partition_tables,
    piece_sums,
    swept_piece_sums,
)
from depstat.count.kernels.sweep import drop_positions, drop_sums, null_sweep_sums

__all__ = [
    "CELL_TOTAL", "DENSE_RANGE_CELLS", "Emitted", "LISTED_PAIRS", "MODE_IID", "MODE_PAIRS", "MODE_REAL",
    "MODE_ROTATE", "NOTE_BLOCKS", "NOTE_PAIRS", "NO_LAYOUT", "N_CHUNKS", "N_SUMS", "PREFETCH_AHEAD", "SHARD_PART",
    "SUM_TABLES", "Slots", "Source", "TABLE_SIZE", "XLOC_BITS", "XLOC_MASK", "count_deltas", "count_sums",
    "dense_counts", "dense_range_tables", "dense_table_sums", "drop_positions", "drop_sums", "emit_block",
    "emit_pairs", "merge_pieces", "move_partners", "null_sweep_sums", "partition_layout", "partition_sums",
    "partition_tables", "partition_tokens", "partner_runs", "piece_sums", "relabel", "row_sums",
    "swept_piece_sums", "token_counts",
]
MODULES = (common, dense, emit, marginals, partition, pieces, sweep)


def _drop_stale_cache() -> None:
    """Numba drops a kernel's cached code when the kernel's own file changes, not when a helper it compiles
    in from another file of this package does; so a change to any file here drops every cached kernel of
    the package (a digest of their sources is kept beside the cache). Where the cache cannot be read or
    written, nothing is done."""
    folder = Path(__file__).parent
    digest = hashlib.blake2b(b"".join(p.read_bytes() for p in sorted(folder.glob("*.py"))), digest_size=16).hexdigest()
    try:
        caches = {Path(d._cache._cache_path) for m in MODULES for d in vars(m).values() if isinstance(d, Dispatcher)}
    except AttributeError:
        return
    stems = {m.__name__.rpartition(".")[2] for m in MODULES}  # cache files are named FILE-STEM.KERNEL-LINE...
    for cache in caches:
        stamp = cache / "depstat-kernels.digest"
        try:
            if stamp.is_file() and stamp.read_text() == digest:
                continue
            for path in cache.glob("*.nb[ic]"):
                if path.name.split(".", 1)[0] in stems:
                    path.unlink(missing_ok=True)
            cache.mkdir(parents=True, exist_ok=True)
            stamp.write_text(digest)
        except OSError:
            continue


_drop_stale_cache()
