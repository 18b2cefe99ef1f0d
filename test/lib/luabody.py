"""The body Redis runs for a script of schema/lua, as the binaries load it
(src/common/luascript.c): prelude.lua, a newline, then the script's file. Tests that EVAL
a script themselves send this, never the bare file."""

from pathlib import Path

LUA_DIR = Path(__file__).resolve().parents[2] / "schema" / "lua"


def lua_body(name):
    """The body of schema/lua/<name>.lua."""
    prelude = (LUA_DIR / "prelude.lua").read_text(encoding="utf-8")
    return prelude + "\n" + (LUA_DIR / f"{name}.lua").read_text(encoding="utf-8")
