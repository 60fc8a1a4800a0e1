"""A large static page as a small page and a folder of its parts, each built when it is opened.

The full page of a large log holds every graph, kernel and guard tree: tens of MB and a
hundred thousand elements, seconds in a browser before anything can be read. So the full
page is rendered with its heavy parts *deferred* (:meth:`Chunks.add`): the body of every tab
but the first, and the content of every closed ``<details>`` (a table row's details, a
graph of the "compile id · stage" choice, a closed tree node). Where a deferred part stood,
the page holds a placeholder, ``<div data-ipyc-c="N"></div>`` (or a button that builds the next
rows of a long table: a ``div``, or a ``tbody`` among a plain table's rows); nothing else
writes these (text is always escaped), so they are found by a regular expression.

What :func:`write_page` does with the parts depends on their size, as tlparse writes its
pages beside its index:

- a page of at most :data:`FOLDER_ABOVE` characters is one self-contained file, the parts put
  back in their places (:meth:`Chunks.expand`): byte for byte the page rendered without
  deferring (notebook copies, small reports);
- a larger one is ``PAGE.html`` (the first screen: the doctor's findings, the chips, the tab
  strip and the first tab) and ``PAGE_files/N.js`` beside it, each file about
  :data:`FILE_BYTES` of parts, as ``ipycPut({"N": function(){/*html*/}, ...})`` (:func:`_as_js`). The page's script
  (:data:`LOADER`) loads a file with ``<script src>`` (which works from ``file://``, where
  ``fetch`` does not) when a tab is selected, a ``<details>`` opened, or a link followed to a
  place inside a part not built yet, and puts the part in place. Without script the page
  says that its panels need it; the browser's find sees the parts built so far ("Load every
  panel" builds them all).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import tempfile
from typing import Callable, Optional
from urllib.parse import quote

from ..report.files import WRITTEN_HOOKS, atomic_writer
from ..report.text import utf8_safe

__all__ = ["Chunks", "write_page", "parts_in_file", "FOLDER_ABOVE", "FILE_BYTES", "LOADER", "side_folder", "PLACEHOLDER"]

#: A page whose parts pass this many characters is written as a page and a folder (Chromium builds
#: about 4 MB of a large report's HTML a second on a busy 2-core machine: this opens within 0.5 s).
FOLDER_ABOVE = 2 << 20
#: About how many characters of parts each side file holds (a part larger than this has a file of its own).
FILE_BYTES = 1 << 20

#: What stands in the page where a deferred part goes.
PLACEHOLDER = re.compile(r'<(div|tbody) data-ipyc-c="(\d+)"[^>]*>(?:[^<]*|<tr><td colspan="\d+">[^<]*</td></tr>)</\1>')
_ID = re.compile(r' id="([^"]+)"')
_HREF = re.compile(r' href="#([^"]+)"')
#: How a side file starts (an old folder is replaced only if every file in it is one of ours).
_FILE_START = b"ipycPut("
_FILE_NAME = re.compile(r"\d+\.js")


def _as_js(part: str) -> str:
    """A part as a side file holds it: a function whose body is a comment holding the part's HTML,
    which the loader reads back with ``Function.prototype.toString`` (it gives a function's source
    text exactly, ECMAScript 2019). Nothing is escaped but a ``*/`` (in code: a C comment's end),
    written ``*&#47;``, which HTML reads back as ``*/``: a JSON string would escape every quote and
    newline, a third of the CPU the page's writing costs."""
    part = utf8_safe(part)
    return "function(){/*" + (part.replace("*/", "*&#47;") if "*/" in part else part) + "*/}"


#: A side file's parts, as :func:`_as_js` writes them.
PART_IN_FILE = re.compile(r'"(\d+)":function\(\)\{/\*(.*?)\*/\}', re.S)


def parts_in_file(text: str) -> dict[str, str]:
    """The parts a side file holds, by number (as strings), as rendered (a ``*/`` given back)."""
    if not (text.startswith("ipycPut({") and text.endswith("});\n")):
        raise ValueError("not a file of a page's parts (ipycPut({...});)")
    return {n: part.replace("*&#47;", "*/") for n, part in PART_IN_FILE.findall(text)}


def side_folder(path: str) -> str:
    """The folder of a page's parts: ``report.html`` -> ``report_files`` beside it."""
    head, name = os.path.split(path)
    return os.path.join(head, os.path.splitext(name)[0] + "_files")


class Chunks:
    """The deferred parts of one page, numbered in the order they are rendered (a part's own
    parts come before it). Held in memory up to :data:`FOLDER_ABOVE` characters; past it, and
    given a ``folder`` to write into, they go to side files of about :data:`FILE_BYTES`."""

    def __init__(self, folder: Optional[str] = None, limit: int = FOLDER_ABOVE, file_bytes: int = FILE_BYTES):
        self.folder = folder  # where side files go once the parts pass ``limit`` (None: always held)
        self.limit = limit
        self.file_bytes = file_bytes
        self.held: list[str] = []  # the parts not written yet, from number ``self.first_held``
        self.first_held = 0
        self.held_size = 0
        self.count = 0
        self.size = 0  # characters of all the parts
        self.starts: list[int] = []  # the first part of each side file written
        self.spilled = False
        self.ids: dict[str, int] = {}  # an id in a part -> that part
        self.parent: dict[int, int] = {}  # a part -> the part that holds its placeholder
        self.hrefs: set[str] = set()  # the in-page links of every part and of the page

    def add(self, text: str) -> int:
        """Keep ``text`` as a part; returns its number (for its placeholder)."""
        n = self.count
        self.count += 1
        self.size += len(text)
        if "data-ipyc-c" in text:  # (a test for a substring is many times faster than a regex's scan)
            for m in PLACEHOLDER.finditer(text):
                self.parent[int(m.group(2))] = n
        if self.folder is not None:  # where a link lands, for the loader (an inline page needs none)
            if ' id="' in text:
                for i in _ID.findall(text):
                    self.ids.setdefault(i, n)
            if ' href="#' in text:
                self.hrefs.update(_HREF.findall(text))
        self.held.append(text)
        self.held_size += len(text)
        if self.folder is not None and self.size > self.limit:
            self.spilled = True
        while self.spilled and self.held_size >= self.file_bytes:
            self._write_file()
        return n

    def _write_file(self) -> None:
        """Write the first held parts, about :attr:`file_bytes` of them, as the next side file."""
        take, size = 0, 0
        while take < len(self.held) and (take == 0 or size + len(self.held[take]) <= self.file_bytes):
            size += len(self.held[take])
            take += 1
        index = len(self.starts)
        self.starts.append(self.first_held)
        with open(os.path.join(self.folder, f"{index}.js"), "wb") as f:
            f.write(_FILE_START + b"{" + ",".join(f'"{self.first_held + i}":{_as_js(t)}'
                                                  for i, t in enumerate(self.held[:take])).encode("utf-8") + b"});\n")
        self.first_held += take
        self.held_size -= size
        del self.held[:take]

    def finish(self) -> None:
        """Write the parts still held, once the page has spilled into side files."""
        while self.spilled and self.held:
            self._write_file()

    def expand(self, text: str) -> str:
        """``text`` with every placeholder replaced by its part (and their parts in turn): the
        page as it would be without deferring. Only for parts still held (an unspilled page)."""
        if self.spilled:
            raise ValueError("the parts were written to side files: they cannot be put back")
        out: list[str] = []
        todo = [(text, 0)]  # a stack, not recursion: a long table's lots nest one in the next
        while todo:
            s, pos = todo.pop()
            m = PLACEHOLDER.search(s, pos)
            if m is None:
                out.append(s[pos:])
                continue
            out.append(s[pos:m.start()])
            todo.append((s, m.end()))
            todo.append((self.held[int(m.group(2)) - self.first_held], 0))
        return "".join(out)

    def manifest(self, folder_url: str, page_text: str) -> dict:
        """What the loader needs: the folder's URL, the first part of each file, and for each
        id that a link of the page or of a part names and that lies in a part, the part (``t``)
        and the parts that hold it (``p``: a part -> its parent)."""
        hrefs = self.hrefs | set(_HREF.findall(page_text))
        targets = {html.unescape(i): self.ids[i] for i in hrefs if i in self.ids}
        parents: dict[int, int] = {}
        for n in targets.values():
            while n in self.parent and n not in parents:
                parents[n] = self.parent[n]
                n = self.parent[n]
        return {"dir": folder_url, "starts": self.starts, "t": targets, "p": {str(k): v for k, v in parents.items()}}


#: The loader of a page with side files: builds a part when its tab is selected (a panel's
#: ``hidden`` removed, however: a click, a key, a link, the browser's find), when its
#: ``<details>`` opens, and before a link to a place inside it is followed (the tabs' script then
#: selects the tab and opens the details, as on a whole page); "Load every panel" builds them all.
#: ``%MANIFEST%`` is replaced by :meth:`Chunks.manifest` as JSON.
LOADER = (
    "<script>(function(){var M=%MANIFEST%,S={},F={},W={},root=document.querySelector('.ipyc>.tabs').parentNode;"
    "window.ipycPut=function(c){for(var k in c){var f=''+c[k];S[k]=f.slice(f.indexOf('/*')+2,f.lastIndexOf('*/'))}};"
    "function fileOf(n){var i=0;while(i+1<M.starts.length&&M.starts[i+1]<=n)i++;return i}"
    "function load(i,then){if(F[i]===1)return then();(W[i]=W[i]||[]).push(then);if(F[i]===0)return;F[i]=0;"
    "var s=document.createElement('script');s.src=M.dir+i+'.js';"
    "s.onload=function(){F[i]=1;var w=W[i];W[i]=[];w.forEach(function(f){f()})};"
    "s.onerror=function(){F[i]=undefined;var w=W[i];W[i]=[];w.forEach(function(f){f(1)})};document.head.appendChild(s)}"
    "function fill(el,then){var n=el.getAttribute('data-ipyc-c');if(!n||el.ipycBusy)return then&&then();el.ipycBusy=1;"
    "load(fileOf(+n),function(failed){el.ipycBusy=0;if(failed||!(n in S)){el.textContent='This part of the report is in '"
    "+M.dir+fileOf(+n)+'.js, which could not be read: keep the folder beside the page.';el.className='ipyc-missing';"
    "el.removeAttribute('data-ipyc-c');"
    "return then&&then()}var t=document.createElement('template'),tb=el.tagName=='TBODY';"
    # a table's next rows are parsed inside a table (a tbody of them, the next lot's tbody after it)
    "t.innerHTML=tb?'<table>'+S[n]+'</table>':S[n];delete S[n];"
    "var kids=[].slice.call(t.content.querySelectorAll('details[open]>[data-ipyc-c],[role=tabpanel]:not([hidden])>[data-ipyc-c]'));"
    "el.replaceWith.apply(el,[].slice.call((tb?t.content.firstChild:t.content).childNodes));"
    "kids.forEach(function(k){fill(k)});then&&then()})}"
    "function fillIn(p){[].forEach.call(p.querySelectorAll(':scope>[data-ipyc-c]'),function(k){fill(k)})}"
    "document.addEventListener('toggle',function(e){e.target.open&&fillIn(e.target)},true);"
    "var panels=[].slice.call(root.querySelectorAll('[role=tabpanel]'));"
    "new MutationObserver(function(ms){ms.forEach(function(m){m.target.hidden||fillIn(m.target)})})"
    ".observe(root,{subtree:true,attributes:true,attributeFilter:['hidden']});"
    "panels.forEach(function(p){p.hidden||fillIn(p)});"
    "function chain(id,then){var n=M.t[id],c=[];if(n==null||document.getElementById(id))return then();"
    "for(;n!=null;n=M.p[n])c.unshift(n);(function next(){if(!c.length)return then();var n=c.shift(),"
    "el=root.querySelector('[data-ipyc-c=\"'+n+'\"]');el?fill(el,next):next()})()}"
    "function go(id){var a=document.createElement('a');a.href='#'+id;a.hidden=true;root.appendChild(a);a.click();a.remove()}"
    "function more(e){var m=e.target.closest&&e.target.closest('.more[data-ipyc-c]');"
    "if(m&&(e.type=='click'||e.key=='Enter'||e.key==' ')){e.preventDefault();fill(m)}}"
    "root.addEventListener('click',more);root.addEventListener('keydown',more);"
    "document.addEventListener('click',function(e){var a=e.target.closest&&e.target.closest('a[href^=\"#\"]'),"
    "id=a&&a.getAttribute('href').slice(1);if(!id||document.getElementById(id)||M.t[id]==null)return;"
    "e.preventDefault();e.stopPropagation();chain(id,function(){a.click()})},true);"
    "var h=location.hash.slice(1);try{h=decodeURIComponent(h)}catch(x){}h&&chain(h,function(){document.getElementById(h)&&go(h)});"
    "var b=root.querySelector('button.loadall');b&&(b.onclick=function(){b.disabled=true;b.textContent='Loading every panel...';"
    "(function more(){var els=root.querySelectorAll('[data-ipyc-c]'),left=els.length;"
    "if(!left){b.textContent='Every panel is loaded';return}"
    "[].forEach.call(els,function(el){fill(el,function(){--left||setTimeout(more)})})})()})})()</script>"
)

_CSS = (".ipyc div.more[data-ipyc-c]{display:inline-block;margin:4px 0}"
        ".ipyc .more[data-ipyc-c]{cursor:pointer;color:var(--ic-link);text-decoration:underline}"
        ".ipyc .tabs.on [data-ipyc-c]:empty::before{content:'Loading...';color:var(--ic-muted)}"
        ".ipyc button.loadall{font:inherit;font-size:12px;cursor:pointer;color:var(--ic-fg);background:var(--ic-panel);"
        "border:1px solid var(--ic-border);border-radius:3px;padding:1px 6px;margin-left:4px}")


#: What a page with side files shows under its tab strip: where its panels are, and a button
#: that builds them all (for the browser's find); without script, that the panels need it.
def _note(folder: str, size: int) -> str:
    name = html.escape(os.path.basename(folder))
    return (f'<style>{_CSS}</style><p class="note">A large report: each panel is built when it is opened, from the folder {name} beside '
            f'this page (keep them together). <button class="loadall" type="button">Load every panel '
            f'({size / 1e6:.0f} MB) for the browser\'s find</button></p>'
            f'<noscript><p class="warn">This page builds its panels with script, from the folder {name} beside it: '
            f'open it in a browser with script on.</p></noscript>')


def write_page(path: str, head: str, render: Callable[[Chunks], str], tail: str = "",
               limit: int = FOLDER_ABOVE) -> list[str]:
    """Write a page at ``path``: ``head``, what ``render(chunks)`` returns (the page's body, its
    heavy parts deferred into ``chunks``), ``tail``. At most ``limit`` characters of parts: one
    self-contained file (an earlier page's folder of parts removed). More: the page and its folder
    of side files (:func:`side_folder`), which replaces an earlier one; a folder of that name that
    ipycompile did not write is never touched: the page is then refused (``FileExistsError``).
    Returns the paths written (the page first). A failed write leaves an earlier page and its
    folder as they were."""
    target = os.path.realpath(path)
    folder = side_folder(target)
    ours = _ours(folder)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(folder)}.", suffix=".tmp", dir=os.path.dirname(target))
    try:
        chunks = Chunks(tmp, limit)
        body = render(chunks)
        if not chunks.spilled:
            with atomic_writer(path, "w", encoding="utf-8") as f:
                f.write(utf8_safe(head))
                f.write(utf8_safe(chunks.expand(body)))
                f.write(utf8_safe(tail))
            if ours and os.path.isdir(folder):  # an earlier page's parts, no longer its
                shutil.rmtree(folder, ignore_errors=True)
            return [target]
        if not ours:
            raise FileExistsError(f"{folder} is in the way of the page's parts, and ipycompile did not write it "
                                  "(it holds other files): move it, or write the page under another name")
        chunks.finish()
        url = quote(os.path.basename(folder)) + "/"
        loader = LOADER.replace("%MANIFEST%", json.dumps(chunks.manifest(url, body)).replace("</", "<\\/"))
        note_at = body.find('<div class="tabs">')
        body = body[:note_at] + _note(folder, chunks.size) + body[note_at:]
        old = None
        if os.path.isdir(folder):
            old = tmp + ".old"
            os.rename(folder, old)
        placed = False
        try:
            with atomic_writer(path, "w", encoding="utf-8") as f:
                f.write(utf8_safe(head))
                f.write(utf8_safe(body + loader))  # after the report: the loader finds it
                f.write(utf8_safe(tail))
                os.rename(tmp, folder)  # the parts in place just before the page is
                placed = True
        except BaseException:
            if placed:
                os.rename(folder, tmp)  # removed below
            if old is not None:
                os.rename(old, folder)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        written = [os.path.join(folder, f"{i}.js") for i in range(len(chunks.starts))]
        for hook in list(WRITTEN_HOOKS):
            for p in written:
                hook(p)
        return [target, *written]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _ours(folder: str) -> bool:
    """Whether ``folder`` is absent or a folder of side files ipycompile wrote (each file ``N.js``
    starting ``ipycPut(``): one it may replace or remove."""
    if not os.path.lexists(folder):
        return True
    if os.path.islink(folder) or not os.path.isdir(folder):
        return False
    for name in os.listdir(folder):
        p = os.path.join(folder, name)
        if not (_FILE_NAME.fullmatch(name) and os.path.isfile(p) and not os.path.islink(p)):
            return False
        with open(p, "rb") as f:
            if f.read(len(_FILE_START)) != _FILE_START:
                return False
    return True
