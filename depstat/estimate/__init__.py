"""Estimating MI: estimators and the jackknife (estimators), a stream's MI profile and the Profile result with its files (profile)."""
