"""Other jax releases, each in an environment of its own, for any project.

:mod:`._envs` builds and caches one environment per release on this machine (uv where one
is found, else pip; a Python the release installs on), :mod:`._wheel` makes a wheel of the
running jaxport and :mod:`._project_env` the environment where a project's golden items run
with another release. :mod:`._replay` replays entries with a release's own ``jax.export``
(the scripts of the distribution's ``jaxport_in_release`` package run there, without jaxport) and :mod:`._bisect` finds the
first release that breaks an entry. The command line drives them: ``jaxport record/replay
--with-jax`` and ``jaxport bisect``.
"""
