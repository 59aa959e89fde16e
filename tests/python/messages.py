"""How the tests match the messages docs/errors.md quotes."""
import re


def exactly(message):
    """A pattern matching the whole message."""
    return "^" + re.escape(message) + "$"
