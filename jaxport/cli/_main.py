"""The ``jaxport`` command line: audit, inspect, import, prune, record, replay, upgrade, bisect.

Exit status: 0 when all is well, 1 when the command found problems (audit
problems, datasets that failed to import), 2 for usage errors and unreadable
input, 130 when interrupted (Ctrl-C; ``prune --yes`` then says which entries
it removed). Module bytes are parsed in a child process (``cli._parser``): a
module that crashes or hangs it is one audit problem or failed dataset (1),
and unreadable input for ``inspect`` and ``upgrade`` (2). Progress goes to
stderr through logging (``-q`` quiets it, ``-v`` adds detail); results go to
stdout, as JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from jaxport.cli import _native_logs  # noqa: F401  (first: before anything loads jaxlib)
from jaxport import _progress
from jaxport.cli import _harness_run, _with_tf
from jaxport.cli._arguments import IMPORT_ARTIFACTS, REPORT, build_parser, import_artifacts_usage_error
from jaxport.cli._project_args import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK
from jaxport.errors import JaxportError

logger = logging.getLogger("jaxport.cli")

# What each command runs, as ``module:function`` (called with the parsed arguments and the
# ones left for pytest), imported when the command runs: ``record``, ``replay``, ``prune``
# and ``report`` never load jax, which the commands reading artifacts need.
_COMMANDS = {
    "audit": "jaxport.cli._module_commands:audit",
    "inspect": "jaxport.cli._inspect:run",
    "import-jax-testdata": "jaxport.cli._module_commands:import_jax_testdata",
    IMPORT_ARTIFACTS: "jaxport.cli._import_artifacts:run",
    "prune": "jaxport.cli._prune:run",
    "record": "jaxport.cli._main:harness",
    "replay": "jaxport.cli._main:harness",
    REPORT: "jaxport.cli._report:run",
    "upgrade": "jaxport.cli._module_commands:upgrade",
    "bisect": "jaxport.cli._bisect:run",
    "matrix": "jaxport.cli._matrix:run",
}


class _StderrHandler(logging.StreamHandler):
  """Writes to whatever ``sys.stderr`` is at the time of each record."""

  @property
  def stream(self):
    return sys.stderr

  @stream.setter
  def stream(self, value):
    pass

  def emit(self, record):
    # A message in the middle of a progress bar starts on a cleared line; the bar redraws after.
    if _progress.is_terminal(self.stream):
      self.stream.write(_progress.CLEAR_LINE)
    super().emit(record)


def _chosen_parser(parser: argparse.ArgumentParser,
                   args: argparse.Namespace) -> argparse.ArgumentParser:
  """The parser of the (sub)command ``args`` chose, such as ``jaxport report render``'s: a usage
  error shows that command's usage and name, not the top-level ones."""
  chosen = parser
  while True:
    subcommands = [a for a in chosen._actions if isinstance(a, argparse._SubParsersAction)]
    name = getattr(args, subcommands[0].dest, None) if subcommands else None
    if name not in (subcommands[0].choices if subcommands else ()):
      return chosen
    chosen = subcommands[0].choices[name]


def main(argv: list[str] | None = None) -> int:
  """Run the command line; returns the exit status."""
  parser = build_parser()
  args, extra = parser.parse_known_args(argv)
  if extra and args.command not in ("record", "replay"):
    _chosen_parser(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
  if args.command == "prune" and (args.older_than_days is None and not args.dated_in_future
                                  and not args.superseded and not args.case):
    _chosen_parser(parser, args).error(
        "say which entries to remove: --older-than-days DAYS (expired), --superseded (older "
        "entries of a case by the same jax release), --dated-in-future, or --case CASE_ID "
        "(every entry of that case); they combine, and --case narrows the others to that case")
  if args.command in ("record", "replay") and _with_tf.usage_error(args):
    _chosen_parser(parser, args).error(_with_tf.usage_error(args))
  if args.command == IMPORT_ARTIFACTS and import_artifacts_usage_error(args):
    _chosen_parser(parser, args).error(import_artifacts_usage_error(args))
  handler = _StderrHandler()
  handler.setFormatter(logging.Formatter("jaxport: %(message)s"))
  root_logger = logging.getLogger("jaxport")
  old_level = root_logger.level
  root_logger.addHandler(handler)
  root_logger.setLevel(logging.DEBUG if args.verbose else logging.WARNING if args.quiet else logging.INFO)
  try:
    return _command(args.command)(args, extra)
  except JaxportError as e:
    prefix = f"jaxport {args.command}: "
    text = str(e)
    # A message that already names the command keeps one prefix, not two.
    sys.stderr.write(f"{prefix}error: {text.removeprefix(prefix)}\n")
    return EXIT_ERROR
  except KeyboardInterrupt:
    sys.stderr.write(f"jaxport {args.command}: interrupted.\n")
    return EXIT_INTERRUPTED
  except BrokenPipeError:
    # The reader of our output went away (``| head``); stop quietly.
    sys.stdout = open(os.devnull, "w")
    return EXIT_OK
  finally:
    root_logger.removeHandler(handler)
    root_logger.setLevel(old_level)


def _command(name: str):
  """The function that runs the command ``name``, its module imported now."""
  module, function = _COMMANDS[name].split(":")
  return getattr(importlib.import_module(module), function)


def harness(args: argparse.Namespace, extra: list[str]) -> int:
  """``jaxport record`` and ``replay``: pytest in the project, with the installed jax or, in
  an environment of its own, another jax release (``--with-jax``) or a TensorFlow release
  (``--with-tf``)."""
  if getattr(args, "with_tf", None) is not None:
    return _with_tf.run_project(args.with_tf, platform=args.platform, report=args.compat_report,
                                extra=extra, project=args.project)
  if args.with_jax is not None:
    from jaxport.cli import _with_jax  # local: it loads jax, which a run with this jax skips
    return _with_jax.run_project(args.command, version=args.with_jax, platform=args.platform,
                                 report=args.compat_report, extra=extra, project=args.project)
  return _harness_run.run(args.command, platform=args.platform, report=args.compat_report,
                          extra=extra, project=args.project)
