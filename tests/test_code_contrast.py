"""Every highlighted token of the code panels reaches WCAG AA (4.5:1) on the code's background, in
every theme (issue 37, section 5): a pure-Python reading of the report's CSS.

The themes: the page alone (light, and dark by ``prefers-color-scheme``), JupyterLab's Light and
Dark (their variables read from the installed theme CSS, under either system scheme) and VS Code's
themes as tests/browser_helpers.py emulates them. For each theme the report's CSS custom properties
are resolved as a browser would (``var()`` with fallbacks, ``color-mix(in srgb, ...)``), then every
pygments token class is given the colour the CSS's ``.hl`` rules give it (the text colour where
none does) and its contrast measured against ``--ic-code``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from browser_helpers import VSCODE_THEMES
from ipycompile.views import html as H

THEME_CSS = Path(sys.prefix) / "share" / "jupyter" / "lab" / "themes" / "@jupyterlab"


# -- a small CSS reader: rules, custom properties, var() and color-mix() ------------------------
def rules(css: str) -> list[tuple[str, str, str]]:
    """``(media, selector, body)`` for each rule (``media`` "" or the ``@media`` condition)."""
    out, i = [], 0
    while i < len(css):
        j = css.find("{", i)
        if j < 0:
            break
        head = css[i:j].strip()
        if head.startswith("@media"):
            depth, k = 1, j + 1
            while depth:
                depth += {"{": 1, "}": -1}.get(css[k], 0)
                k += 1
            out += [(head, s, b) for _, s, b in rules(css[j + 1:k - 1])]
            i = k
            continue
        k = css.find("}", j)
        out.append(("", head, css[j + 1:k]))
        i = k + 1
    return out


def declarations(body: str) -> dict[str, str]:
    out = {}
    for part in body.split(";"):
        if ":" in part:
            name, value = part.split(":", 1)
            out[name.strip()] = value.strip()
    return out


def split_args(text: str) -> list[str]:
    out, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if c == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    return out + [text[start:].strip()]


NAMED = {"white": "#ffffff", "black": "#000000", "green": "#008000", "red": "#ff0000", "blue": "#0000ff"}


def rgba(value: str, props: dict, host: dict) -> tuple[float, float, float, float]:
    """A colour value (hex, rgb[a](), a name, var(), color-mix()) as 0-255 channels and alpha."""
    v = value.strip()
    if v.startswith("var("):
        name, *fallback = split_args(v[4:-1])
        if name in props:
            return rgba(props[name], props, host)
        if name in host:
            return rgba(host[name], props, host)
        assert fallback, f"{name} is not set and has no fallback"
        return rgba(fallback[0], props, host)
    if v.startswith("color-mix("):
        _, a, b = split_args(v[len("color-mix("):-1])
        a_col, share = a.rsplit(" ", 1)
        p = float(share.rstrip("%")) / 100
        x, y = rgba(a_col, props, host), rgba(b, props, host)
        return tuple(x[i] * p + y[i] * (1 - p) for i in range(4))
    if v.startswith("rgb"):
        nums = [float(n) for n in re.findall(r"[\d.]+", v)]
        return (*nums[:3], nums[3] if len(nums) > 3 else 1.0)
    v = NAMED.get(v, v)
    assert v.startswith("#"), v
    h = v[1:]
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16), 1.0


def over(top, bottom):
    a = top[3]
    return tuple(top[i] * a + bottom[i] * (1 - a) for i in range(3)) + (1.0,)


def luminance(c) -> float:
    def f(v):
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2])


def contrast(fg, bg) -> float:
    a, b = luminance(fg), luminance(bg)
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


# -- the themes ------------------------------------------------------------------------------------
def jupyterlab_vars(theme: str) -> dict[str, str]:
    path = THEME_CSS / f"theme-{theme}-extension" / "index.css"
    if not path.exists():
        pytest.skip(f"JupyterLab's {theme} theme is not installed ({path})")
    return {f"--{k}": v.strip() for k, v in re.findall(r"--([\w-]+):([^;}]+)", path.read_text())}


def applies(selector: str, theme: dict) -> bool:
    """Whether a rule's selector matches the report's ``.ipyc`` element (not the widget's) in ``theme``."""
    body = theme.get("body", "")
    if selector == ".ipyc":
        return True
    m = re.fullmatch(r"(.+?) \.ipyc(?::not\(\.ipyc-w,\.ipyc-w \.ipyc\))?", selector)
    if not m:
        return False
    host = m.group(1)
    if host.startswith("body[data-jp-theme-light"):  # JupyterLab's theme, not in VS Code
        return host.removesuffix(":not([class*=vscode])") == body
    if host.startswith("body:is(") or host.startswith(":is("):
        kinds = re.findall(r"\.(vscode-[\w-]+)(?::not\(\.(vscode-[\w-]+)\))?", host)
        classes = set(body.split(".")[1:])
        return any(k in classes and not (no and no in classes) for k, no in kinds)
    return False


def theme_props(theme: dict) -> dict[str, str]:
    props: dict[str, str] = {}
    for media, selector, body in rules(H._THEME):
        if media and ("dark" in media) != theme["dark"]:
            continue
        for sel in split_args(selector):
            if applies(sel, theme):
                props.update({k: v for k, v in declarations(body).items() if k.startswith("--ic-")})
    return props


THEMES = {
    "page light": {"dark": False},
    "page dark": {"dark": True},
}
for _scheme in (False, True):
    _s = "dark system" if _scheme else "light system"
    THEMES[f"JupyterLab Light, {_s}"] = {"dark": _scheme, "jl": "light", "body": 'body[data-jp-theme-light="true"]'}
    THEMES[f"JupyterLab Dark, {_s}"] = {"dark": _scheme, "jl": "dark", "body": 'body[data-jp-theme-light="false"]'}
for _key, _t in VSCODE_THEMES.items():  # VS Code's webview always reports a light scheme
    THEMES[f"VS Code {_t['name']}"] = {"dark": False, "vscode": _t["vars"], "body": "body." + _t["kind"].replace(" ", ".")}
THEMES["VS Code Light High Contrast"] = {"dark": False, "body": "body.vscode-high-contrast.vscode-high-contrast-light",
                                         "vscode": {"editor-background": "#ffffff", "editor-foreground": "#292929"}}


def host_vars(theme: dict) -> dict[str, str]:
    if "jl" in theme:
        return jupyterlab_vars(theme["jl"])
    if "vscode" in theme:
        return {f"--vscode-{k}": v for k, v in theme["vscode"].items()}
    return {}


def token_colour_var(cls: str) -> str:
    """The custom property the CSS's ``.hl`` rules colour token class ``cls`` with (the last rule
    that matches, as the cascade gives it); ``--ic-fg`` (the ``pre``'s colour) where none does."""
    found = "--ic-fg"
    for _, selector, body in rules(H._THEME):
        colour = declarations(body).get("color", "")
        m = re.fullmatch(r"var\((--ic-\w+)\)", colour)
        if not m:
            continue
        for sel in split_args(selector):
            if not sel.startswith(".ipyc .hl "):
                continue
            part = sel[len(".ipyc .hl "):]
            prefix = re.fullmatch(r"\[class\^=(\w+)\]", part)
            if (prefix and cls.startswith(prefix.group(1))) or part == f".{cls}":
                found = m.group(1)
    return found


def token_classes() -> list[str]:
    from pygments.token import STANDARD_TYPES

    return sorted(c for c in set(STANDARD_TYPES.values()) if c)


@pytest.mark.parametrize("name", list(THEMES))
def test_every_token_class_has_aa_contrast_on_the_code_background(name):
    theme = THEMES[name]
    host = host_vars(theme)
    props = theme_props(theme)
    page_bg = rgba(props["--ic-bg"], props, host)
    page_bg = over(page_bg, (255, 255, 255, 1.0) if not theme["dark"] else (18, 18, 18, 1.0))
    code_bg = over(rgba(props["--ic-code"], props, host), page_bg)
    bad = []
    for cls in token_classes():
        var = token_colour_var(cls)
        fg = over(rgba(props[var], props, host), code_bg)
        r = contrast(fg, code_bg)
        if r < 4.5:
            bad.append(f".{cls} ({var}): {r:.2f}:1")
    assert not bad, f"{name}: " + ", ".join(bad)


def test_the_reader_sees_the_known_colours():
    """The reader itself: the page's light comment colour and code background as the CSS has them."""
    props = theme_props(THEMES["page light"])
    assert rgba(props["--ic-code"], props, {})[:3] == (0xf6, 0xf8, 0xfa)
    assert token_colour_var("c1") == "--ic-c" and token_colour_var("kn") == "--ic-k" and token_colour_var("n") == "--ic-fg"
