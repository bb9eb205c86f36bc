"""What several test modules share: a hypothesis strategy for token streams, an assertion on sums."""

from __future__ import annotations

import numpy as np
import numpy.testing as npt
from hypothesis import strategies as st

from depstat.tokenize.stream import TokenStream


@st.composite
def streams(draw: st.DrawFn, max_docs: int = 12, max_len: int = 40) -> TokenStream:
    vocab = draw(st.integers(1, 12))
    lengths = draw(st.lists(st.integers(1, max_len), min_size=1, max_size=max_docs))
    tokens = draw(
        st.lists(st.integers(0, vocab - 1), min_size=sum(lengths), max_size=sum(lengths))
    )
    return TokenStream("h", np.asarray(tokens, dtype=np.int32), np.asarray(lengths), vocab)


def assert_sums_equal(got, want) -> None:
    assert got.n_pairs == want.n_pairs
    npt.assert_array_equal(got.block_pairs, want.block_pairs)
    for name in ("joint", "first", "second", "joint_jk", "first_jk", "second_jk"):
        npt.assert_allclose(getattr(got, name), getattr(want, name), rtol=1e-10, atol=1e-8, err_msg=name)
