"""Differences between the jax releases jaxport supports, one module per concern.

Each module detects the feature it needs (an attribute, a keyword, a class)
rather than comparing version numbers, so a release newer than the ones tested
takes the newest path whenever it still has it. ``_version`` alone reads the
version number: to refuse a jax older than the supported range at import time.
"""
