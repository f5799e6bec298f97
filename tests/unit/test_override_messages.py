"""The value a refused dict override's message quotes back (raylab.train._item_value): whole, at any depth."""

from __future__ import annotations

import pytest

from raylab.train import _item_value, _value_of


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{x_pos:900}", "900"),
        ("{env_vars:{OMP_WAIT_POLICY:PASSIVE}}", "{OMP_WAIT_POLICY:PASSIVE}"),
        ("{a:[1,2],b:3}", "[1,2]"),
        ("{a:{b:{c:1}},d:2}", "{b:{c:1}}"),
        ("{a:'x,y}'}", "'x,y}'"),
        ('{a:"{b",c:1}', '"{b"'),
        ("{a:}", "VALUE"),
        ("{a:{b:1", "{b:1"),
        ("{a:x\\,y,b:1}", "x\\,y"),
        ("{a:'it\\'s',b:1}", "'it\\'s'"),
        ("{a:x\\},b:1}", "x\\}"),
    ],
)
def test_the_quoted_value_is_the_whole_item(text: str, expected: str) -> None:
    assert _item_value(text, text.index(":") + 1) == expected


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        ("{flag_get:0.9,x_pos:900}", "x_pos", "900"),
        ("{x_pos:900}", "x_pos", "900"),
        ("{ a : {b:1}, ab: 2}", "ab", "2"),
        ("{ab:2,a:{b:1}}", "a", "{b:1}"),
        ("{a:1}", "b", "VALUE"),
        ("{a:{x:1},x:2}", "x", "2"),
        ("{a:{x:1}}", "x", "VALUE"),
        ("{a:'x:1',x:2}", "x", "2"),
        ("{a:[{x:1}],x:[3]}", "x", "[3]"),
        ("{a:'it\\'s',x:2}", "x", "2"),
        ("{a:x\\{,x:2}", "x", "2"),
    ],
)
def test_the_named_key_is_found_in_any_item(text: str, key: str, expected: str) -> None:
    assert _value_of(text, key) == expected
