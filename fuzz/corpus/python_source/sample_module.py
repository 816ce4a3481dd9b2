"""A module written to trip a Python reader: every function here, and only these, must be
found. def not_a_function(): this line is inside the module docstring.
"""
import functools
from typing import Callable

TEMPLATE = """
def fake_in_triple_quotes(x):
    return x
"""
# def fake_in_comment(): a comment is not code
PATTERN = 'def fake_in_string(): ' + "class FakeClass:"


@functools.lru_cache(maxsize=None)
@staticmethod
def decorated(value):
    """Decorators are not part of the function."""
    return value + 1


async def fetch(url, *, retries: int = 3) -> bytes:
    '''Triple single quotes, an 'inner' quote.'''
    for attempt in range(retries):
        await sleep(attempt)
    return url.encode()


def configure(
    name: str = "a, b) -> fake:",  # a comment with def inside
    sizes: list[int] = [1, (2, 3)],
    *args,
    mapping: dict[str, "Callable[[int], str]"] = {"key": ")"},
    key=lambda item: item[0],
    **kwargs,
) -> dict[str, int]:
    r"""Raw docstring: \d+ and \n stay as written."""
    text = f"{name!r:>{len(sizes)}} {mapping['key']} {{literal}}"
    pattern = rf"\{{{name}\}}"
    return {text: 1, pattern: 2}


def escapes():
    "Say \"hi\"\tand \x41\u00e9 and it\'s \
joined."
    total = 1 + \
        2
    return total


class Outer:
    """A class docstring is not a function's."""

    class Inner:
        def method(self):
            'Single-quoted docstring.'
            return 1

        @property
        def value(self):
            return 2

        @value.setter
        def value(self, new_value):
            self._value = new_value

    async def run(self):
        """Nested functions and classes stay in the body.

            An indented line.
        The end.
        """
        def helper():
            return 2

        class Local:
            def hidden(self):
                return 3

        return helper()   # a trailing comment

    def stub(self):
        ...

    def only_pass(self):
        """Only pass after the docstring."""
        pass

    def only_docstring(self):
        """Nothing else."""

    def text_block(self):
        message = """
def looks_like_a_function():
    pass
"""
        return message


if __debug__:
    def conditional():
        return 4
else:
    def conditional():
        return 5

try:
    from fast import speedup
except ImportError:
    def speedup(x):  # the fallback
        return x


def one_line(x): return x * 2


def tabs_and_semicolons():
	first = 1; second = 2
	return first + second


def not_a_docstring():
    f"""An f-string is not a docstring."""
    return 8


def unicode_names(naïve=1):
    """Unicode: naïve café — 東京."""
    résumé = naïve
    return résumé
