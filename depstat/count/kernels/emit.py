"""Partitioned counting's first step: tokens cut into partitions of first tokens, and every
slot's pairs written into them in position order (``emit_pairs``)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from depstat.count.kernels.common import (
    MODE_PAIRS,
    MODE_REAL,
    MODE_ROTATE,
    PAIRS_GROUP,
    PAIRS_RUN,
    PREFETCH_AHEAD,
    ROTATE_RUN_BITS,
    ROTATE_SEED,
    _deal_blocks,
    _mix,
    _partner,
    _prefetch_write,
    _rotation_base,
    kernel,
    run_workers,
)

# Partitioned counting (vocabularies above DENSE_MAX_VOCAB). Token ids are frequency ranks
# (``PairCounter`` relabels), cut into partitions: runs of at most 2^XLOC_BITS consecutive
# ids holding about ``part_tokens`` positions. A position's pairs are stored as ``xloc``
# (the first token's index in its partition, one byte) and one partner token per partner
# process, in the dtype of the relabelled stream.
XLOC_BITS = 8


XLOC_MASK = (1 << XLOC_BITS) - 1


@kernel()
def partition_tokens(counts: np.ndarray, part_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """Cut token ids (sorted by count, descending) into partitions of about ``part_tokens`` positions.

    Returns ``code`` (``partition << XLOC_BITS | xloc`` per token) and each partition's width.
    """
    code = np.empty(counts.shape[0], dtype=np.int32)
    widths = np.empty(counts.shape[0] + 1, dtype=np.int64)
    q, w, size = 0, 0, 0
    for x in range(counts.shape[0]):
        if w > 0 and (w == XLOC_MASK + 1 or size + counts[x] > part_tokens):
            widths[q] = w
            q, w, size = q + 1, 0, 0
        code[x] = (q << XLOC_BITS) | w
        w += 1
        size += counts[x]
    widths[q] = w
    return code, widths[: q + 1].copy()


@kernel()
def partition_layout(tok: np.ndarray, code: np.ndarray, block_starts: np.ndarray, n_parts: int) -> np.ndarray:
    """Where the pairs of each (partition, block) start in the pair buffers: partition-major, blocks in order.

    Room is made for every position; offsets that lose the last positions of documents
    leave gaps, which ``emit_pairs`` reports through ``fill_end``.
    """
    n_blocks = block_starts.shape[0] - 1
    room = np.zeros((n_parts, n_blocks), dtype=np.int64)
    for g in range(n_blocks):
        for p in range(block_starts[g], block_starts[g + 1]):
            room[code[tok[p]] >> XLOC_BITS, g] += 1
    region = np.empty((n_parts, n_blocks), dtype=np.int64)
    total = 0
    for q in range(n_parts):
        for g in range(n_blocks):
            region[q, g] = total
            total += room[q, g]
    return region


@kernel(inline="always")
def _partner_run(
    q: int, last: int, r: int, mode: int, seed: int, shift: int, n: int, layout: np.ndarray, s: int,
) -> tuple[int, int]:
    """``(stop, off)``: positions q .. stop - 1 (stop <= last) have their partner at ``i + off``.

    The real partner is one run; the rotation null is a run up to the next jitter change
    or wrap-around; the i.i.d. null is a run of one position; the pair-list rotation
    (``_pairs_run``) a run up to a jitter change, wrap-around or its partners' document
    end. Inner loops then read the partners as a second sequential stream.
    """
    if mode == MODE_REAL:
        return last, r
    if mode == MODE_ROTATE:
        v = _rotation_base(q, shift, n)
        stop = min(last, (q | ((1 << ROTATE_RUN_BITS) - 1)) + 1, q + n - v)
        return stop, v - q
    if mode == MODE_PAIRS:
        return _pairs_run(q, last, r, shift, n, layout[0], layout[1 + s])
    return q + 1, _partner(q, 0, r, mode, n, seed) - q


@kernel(inline="always")
def _pairs_run(
    q: int, last: int, r: int, shift: int, n: int, starts: np.ndarray, pair_starts: np.ndarray,
) -> tuple[int, int]:
    """``_partner_run`` of the pair-list rotation at offset r: number the k pairs (p, p + r)
    in position order (``pair_starts[d]``: the pairs before document d, which starts at
    ``starts[d]``); pair i's partner is the second token of pair j: u = (i + shift k / n) mod k
    (the rotation null's shift scaled to the pairs), its run of PAIRS_RUN swapped with another
    of its aligned group of PAIRS_GROUP runs (a key drawn per group) where the group is whole."""
    k = pair_starts[pair_starts.shape[0] - 1]
    d = np.searchsorted(starts, q, side="right") - 1
    i = pair_starts[d] + q - starts[d]
    u = (i + shift * k // n) % k
    whole = k // (PAIRS_RUN * PAIRS_GROUP) * (PAIRS_RUN * PAIRS_GROUP)  # pairs in whole groups
    if u < whole:
        b = u // PAIRS_RUN
        key = np.int64(_mix(b // PAIRS_GROUP, ROTATE_SEED) % np.uint64(PAIRS_GROUP))
        j = (b ^ key) * PAIRS_RUN + u - b * PAIRS_RUN
        left = (b + 1) * PAIRS_RUN - u  # the run's pairs from u on
    else:
        j = u
        left = k - u
    e = np.searchsorted(pair_starts, j, side="right") - 1
    stop = min(last, q + left, q + pair_starts[e + 1] - j)
    return stop, starts[e] + j - pair_starts[e] + r - q


EMIT_RUN = 4096  # positions per run of emit_pairs: where the first slot's pairs went is kept for the others


@kernel(inline="always")
def _emit_lead(src, out, g, q, stop, off, fill, where, keep, dend, spill):
    """The first slot's pairs of positions q .. stop - 1 (block g's, into ``out``, an ``Emitted``);
    with ``keep``, ``where[i - q]`` keeps each pair's place.

    Positions whose first token is in partition ``spill`` (another group's) are skipped,
    with ``where`` -1. With a ``life`` buffer, each pair also gets ``life_of[d]`` for its position's distance d
    to the document end ``dend`` (capped at the table's end). An empty first or second marginal
    counts no such marginal.
    """
    tok, code = src.tok, src.code
    xloc, ys, life, life_of = out.xloc, out.ys[0], out.life, out.life_of
    first_row, second_row = out.first[0, g], out.second[0, g]
    cap = life_of.shape[0] - 1
    count_first = first_row.shape[0] > 0
    count_second = second_row.shape[0] > 0
    for i in range(q, stop):
        x = tok[i]
        c = code[x]
        k = c >> XLOC_BITS
        if k == spill:
            if keep:
                where[i - q] = -1
            continue
        at = fill[k]
        fill[k] = at + 1
        if keep:
            where[i - q] = at
        if cap >= 0:
            life[at] = life_of[min(dend - i, cap)]
            _prefetch_write(life, at + PREFETCH_AHEAD)
        xloc[at] = c & XLOC_MASK
        _prefetch_write(xloc, at + PREFETCH_AHEAD)
        _prefetch_write(ys, at + PREFETCH_AHEAD)
        if count_first:
            first_row[x] += 1
        y = tok[i + off]
        ys[at] = y
        if count_second:
            second_row[y] += 1


@kernel(inline="always")
def _emit_follow(tok, q, stop, off, where, ys, second_row):
    """Another slot's partners of positions q .. stop - 1, at the places the first slot took."""
    count_second = second_row.shape[0] > 0
    for i in range(q, stop):
        at = where[i - q]
        if at < 0:  # another group's
            continue
        y = tok[i + off]
        ys[at] = y
        _prefetch_write(ys, at + PREFETCH_AHEAD)
        if count_second:
            second_row[y] += 1


@kernel(inline="always")
def _emit_dropped(tok, q, stop, where, ys, sentinel, first_row):
    """Positions q .. stop - 1 have no partner at another slot's (larger) offset: its places get ``sentinel``
    and its first marginal (which ``emit_pairs`` takes from the first slot's; unless empty) loses them."""
    count_first = first_row.shape[0] > 0
    for i in range(q, stop):
        at = where[i - q]
        if at >= 0:
            ys[at] = sentinel
            if count_first:
                first_row[tok[i]] -= 1


class Source(NamedTuple):
    """The positions ``emit_pairs`` reads: the tokens, each token's partition code (``XLOC_BITS``),
    the document ends, the jackknife blocks' starts, and where block g's pairs of partition q
    begin (``region[q, g]``)."""

    tok: np.ndarray
    code: np.ndarray
    doc_ends: np.ndarray
    block_starts: np.ndarray
    region: np.ndarray


class Slots(NamedTuple):
    """What a pass counts: slot s's offset ``r[s]``, partner process ``modes[s]`` (``MODE_*``) and
    seed ``seeds[s]`` (the i.i.d. null's; the pair-list rotation's shift), the rotation null's
    ``shift``, with ``upto`` > 0 only the positions without a partner ``upto`` on in their
    document (what that offset drops), and the pair-list rotation's ``layout``
    (``pairs_layout``; 0 x 0 when no slot is one)."""

    r: np.ndarray
    modes: np.ndarray
    seeds: np.ndarray
    shift: int
    upto: int
    layout: np.ndarray


class Emitted(NamedTuple):
    """Where ``emit_pairs`` writes: first tokens ``xloc``, partners ``ys[s]``, each region's end
    ``fill_end``, the marginals ``first[s, g]`` and ``second[s, g]``, and each pair's
    ``life`` (``life_of`` of its distance to its document's end; both empty for none)."""

    xloc: np.ndarray
    ys: np.ndarray
    fill_end: np.ndarray
    first: np.ndarray
    second: np.ndarray
    life_of: np.ndarray
    life: np.ndarray


def emit_pairs(src: Source, slots: Slots, out: Emitted, sentinel: int, spill: int, add: bool, n_workers: int) -> None:
    """Write the pairs of every slot (offset ``slots.r[s]``, partner process ``slots.modes[s]``),
    read in position order, into their partitions.

    The slots share their first positions, those of the smallest offset ``slot_r[0]``, so one
    pass serves them all: block g's pairs of partition q fill places
    ``region[q, g]:fill_end[q, g]`` of ``xloc`` (the first token) and of ``ys[s]`` (its
    partner in slot s, or ``sentinel`` where the slot's larger offset leaves the position
    no partner in its document). Reads are sequential and the writes go to one stream per
    partition, so little waits on memory. ``first[s, g]`` and ``second[s, g]`` count block
    g's first and partner tokens of slot s (the marginals; with ``add``, added to what they
    hold); a ``first`` or ``second`` of no tokens (its last axis empty) counts no such
    marginal, for a caller that has it from elsewhere (the rotation null's first, the second
    followed from offset to offset) or does not need it. Blocks run in parallel, dealt to
    ``n_workers`` workers (``_deal_blocks``), each into its own regions (``emit_block``).
    Unless ``life_of`` is empty, ``life`` gets each pair's ``life_of[distance to its
    document's end]`` (see ``null_sweep_sums``).

    To count a group of partitions at a time, ``code`` sends the tokens outside the group
    to partition ``spill`` (-1 when every partition is counted), whose positions are
    skipped: neither written nor added to the marginals.
    """
    deal = _deal_blocks(src.block_starts, n_workers)
    run_workers(_emit_worker, deal.shape[0], deal, src, slots, out, sentinel, spill, add)


@kernel()
def _emit_worker(w: int, deal: np.ndarray, src: Source, slots: Slots, out: Emitted, sentinel: int, spill: int,
                 add: bool) -> None:
    """``emit_pairs``' blocks dealt to worker w."""
    for g in deal[w]:
        if g < 0:
            break
        emit_block(src, slots, out, sentinel, spill, add, g)


@kernel(inline="always")
def emit_block(src: Source, slots: Slots, out: Emitted, sentinel: int, spill: int, add: bool, g: int) -> None:
    """``emit_pairs`` for block g alone, on the calling thread: for a caller that must not
    start Numba's threads (a Dask task: the workqueue threading layer aborts when two
    threads of a worker run parallel kernels at once)."""
    tok, doc_ends, block_starts, region = src.tok, src.doc_ends, src.block_starts, src.region
    slot_r, modes, seeds, shift, upto, layout = slots
    ys, fill_end, first, second = out.ys, out.fill_end, out.first, out.second
    n = tok.shape[0]
    n_slots = modes.shape[0]
    fill = region[:, g].copy()
    off = np.empty(n_slots, dtype=np.int64)
    keep = np.empty(n_slots, dtype=np.bool_)
    where = np.empty(EMIT_RUN if n_slots > 1 else 0, dtype=np.int32)  # places < n < 2^31
    if not add:
        first[:, g] = 0
        second[:, g] = 0
    base = np.empty(0, dtype=first.dtype)  # the first slot's counts before this pass, for the other slots
    if n_slots > 1:
        base = first[0, g].copy()
    lo, hi = block_starts[g], block_starts[g + 1]
    d = np.searchsorted(doc_ends, lo, side="right")
    p = lo
    while p < hi:
        end = min(doc_ends[d], hi)
        last = min(end, doc_ends[d] - slot_r[0])  # first positions whose partner stays in the document
        q = max(p, doc_ends[d] - upto) if upto > 0 else p
        while q < last:
            stop = min(last, q + EMIT_RUN)  # a run over which every slot's partner offset is constant
            for s in range(n_slots):
                kept = doc_ends[d] - slot_r[s]  # slot s's positions end here
                keep[s] = q < kept
                if keep[s]:
                    run_stop, off[s] = _partner_run(q, min(last, kept), slot_r[s], modes[s], seeds[s], shift, n,
                                                           layout, s)
                    stop = min(stop, run_stop)
                else:
                    stop = min(stop, last)
            _emit_lead(src, out, g, q, stop, off[0], fill, where, n_slots > 1, doc_ends[d], spill)
            for s in range(1, n_slots):
                if keep[s]:
                    _emit_follow(tok, q, stop, off[s], where, ys[s], second[s, g])
                else:
                    _emit_dropped(tok, q, stop, where, ys[s], sentinel, first[s, g])
            q = stop
        p = end
        d += 1
    for q in range(fill.shape[0]):
        fill_end[q, g] = fill[q]
    for s in range(1, n_slots):  # the slots' first positions are the first slot's, less the dropped ones
        for x in range(base.shape[0]):
            first[s, g, x] += first[0, g, x] - base[x]
