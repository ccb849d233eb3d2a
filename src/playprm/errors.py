"""The one exception type a user sees: a single line, exit code 2, raised before any model loads."""


class UsageError(Exception):
    """Bad input from the user (a flag, a file, a registry entry).

    The CLI prints ``playprm: error: <message>`` on one line and exits with code 2; the message should say
    what is wrong and how to fix it.
    """
