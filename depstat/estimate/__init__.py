"""Estimating MI: estimators and the jackknife (estimators), the pipeline and its Profile result (profile)."""
