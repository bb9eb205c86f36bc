"""Counting pairs at each offset: Numba kernels (kernels/), the counting order (order), the local engine (counting), mergeable tables and the Dask engine (distributed)."""
