"""The jaxport compat harness: replays golden serialized modules against the installed jax.

Run ``pytest harness/ --platform=cpu``; see ``docs/harness.md``.
"""
