"""Counting pairs at each offset: Numba kernels, the local engine (counting), mergeable tables and the Dask engine (distributed)."""
