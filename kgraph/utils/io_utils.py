"""Where progress messages go: standard output while interactive logging is on (the default), the ``kgraph``
logger (at INFO level) once ``disable_interactive_logging()`` turns it off, as Keras sends them to ``absl``."""
import logging
import sys

_STATE = {"interactive": True}
_LOGGER = logging.getLogger("kgraph")


def enable_interactive_logging():
    """Write ``fit``'s progress bars and messages to standard output (the default)."""
    _STATE["interactive"] = True


def disable_interactive_logging():
    """Send ``fit``'s progress messages to the ``kgraph`` logger (INFO level) instead of standard output."""
    _STATE["interactive"] = False


def is_interactive_logging_enabled():
    """True while progress messages go to standard output."""
    return _STATE["interactive"]


def print_msg(message, line_break=True, stream=None):
    """Write ``message`` to ``stream`` (standard output by default) or, with interactive logging off, log it."""
    message = str(message)
    if not is_interactive_logging_enabled():
        _LOGGER.info(message.rstrip("\n"))
        return
    stream = stream or sys.stdout
    text = message + "\n" if line_break else message
    try:
        stream.write(text)
    except UnicodeEncodeError:  # a stream whose encoding lacks the bar's characters
        encoding = getattr(stream, "encoding", None) or "utf-8"
        stream.write(text.replace("━", "=").encode(encoding, errors="ignore").decode(encoding))
    stream.flush()
