"""Writing a large page as its first screen and a folder of parts (:mod:`ipycompile.views.page_files`):
what is written where, byte for byte the one-file page once put back, and a folder of that name
that is not ours never touched. The page in a browser: tests/test_large_page.py."""

from __future__ import annotations

import re
import warnings

import pytest

from tracefile import gpu_records


@pytest.fixture(scope="module")
def report():
    import ipycompile

    return ipycompile.build_report(gpu_records("quickstart"))


def _save(report, path, folder_above):
    from ipycompile.views.html import save_html

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return save_html(report, str(path), folder_above=folder_above)


def _parts(folder) -> dict:
    from ipycompile.views.page_files import parts_in_file

    out = {}
    for f in sorted(folder.iterdir()):
        assert re.fullmatch(r"\d+\.js", f.name)
        out.update(parts_in_file(f.read_text(encoding="utf-8")))
    return out


def _normal(page: str) -> str:
    return re.sub(r"ipyc\d+-\d+", "A", re.sub(r"-cols\d+", "-colsN", page))


def test_parts_put_back_give_the_page_rendered_whole(report, tmp_path):
    from ipycompile.views.page_files import PLACEHOLDER

    from ipycompile.views.html import write_body

    _save(report, tmp_path / "one.html", 1 << 40)
    _save(report, tmp_path / "split.html", 10_000)
    one = (tmp_path / "one.html").read_text()
    split = (tmp_path / "split.html").read_text()
    assert not (tmp_path / "one_files").exists()
    whole: list[str] = []  # the page rendered without deferring anything (a page on stdout)
    write_body(report, whole.append)
    whole = one[:one.index("<style>")] + "".join(whole) + "\n</body></html>\n"
    assert _normal(one) == _normal(whole)  # under the threshold: the one-file page, byte for byte
    parts = _parts(tmp_path / "split_files")
    assert len(parts) > 10 and len(split) < len(whole) / 3
    assert "ipycPut" not in whole and "data-ipyc-c" not in whole
    # the folder page's own additions: its note (with the loader's style) before the tabs, the loader after the report
    split = re.sub(r'<style>[^<]*</style><p class="note">A large report:.*?</noscript>', "", split, flags=re.S)
    split = re.sub(r"<script>\(function\(\)\{var M=.*?</script>", "", split, flags=re.S)

    def put(m):
        return PLACEHOLDER.sub(put, parts[m.group(2)])

    assert _normal(PLACEHOLDER.sub(put, split)) == _normal(whole)


def test_written_again_it_replaces_its_folder_or_removes_it(report, tmp_path):
    page = tmp_path / "page.html"
    _save(report, page, 10_000)
    folder = tmp_path / "page_files"
    n = len(list(folder.iterdir()))
    (folder / "999.js").write_text("ipycPut({});\n")  # a part an earlier, larger page had
    _save(report, page, 10_000)
    assert len(list(folder.iterdir())) == n and not (folder / "999.js").exists()
    _save(report, page, 1 << 40)  # now one file: its parts are no longer its
    assert not folder.exists() and "data-ipyc-c" not in page.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]  # no temporary folder left


def test_a_folder_that_is_not_ours_is_never_touched(report, tmp_path):
    page = tmp_path / "page.html"
    folder = tmp_path / "page_files"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")  # a browser's "save page, complete" folder, say
    with pytest.raises(FileExistsError, match=r"page_files is in the way of the page's parts, and ipycompile did not write it"):
        _save(report, page, 10_000)
    assert not page.exists() and [p.name for p in folder.iterdir()] == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page_files"]
    _save(report, page, 1 << 40)  # a one-file page needs no folder: the other one stays
    assert page.exists() and [p.name for p in folder.iterdir()] == ["notes.txt"]


def test_a_table_of_a_quarter_million_rows_in_lots(tmp_path):
    """1,250 lots of 200 rows, each behind the button at the end of the one before: written (as one
    file and as a folder) and put back with no deep recursion, the rows all there, in order."""
    from ipycompile.views.blocks import Tab, Table, Text, ViewModel
    from ipycompile.views.html import render_view_model
    from ipycompile.views.page_files import PLACEHOLDER, Chunks, write_page

    n = 250_000
    table = Table(["n"], [[i] for i in range(n)])
    vm = ViewModel(header=[], tabs=[Tab("first", "First", lambda: [Text("first")]), Tab("big", "Big", lambda: [table])])
    plain = render_view_model(vm)  # nothing deferred
    rows = re.findall(r'<td class="n">(\d+)</td>', plain)
    assert rows == [str(i) for i in range(n)]
    chunks = Chunks(None)  # held: put back as one page
    assert _normal(chunks.expand(render_view_model(vm, chunks=chunks))) == _normal(plain)
    assert chunks.count == (n // 200 - 1) + 1  # the lots after the first, and the tab's body
    written = write_page(str(tmp_path / "big.html"), "", lambda c: render_view_model(vm, chunks=c), limit=10_000)
    parts = _parts(tmp_path / "big_files")
    assert len(written) - 1 == len(list((tmp_path / "big_files").iterdir())) and len(parts) == chunks.count
    buttons = [m.group(0) for p in parts.values() for m in PLACEHOLDER.finditer(p) if "Show rows" in m.group(0)]
    assert len(buttons) == n // 200 - 1 and 'colspan="1">Show rows 249801 to 250000 (of 250000)<' in buttons[0]


def test_a_part_holding_a_comment_end_is_kept_whole(tmp_path):
    """A side file holds each part in a JavaScript comment: a ``*/`` in it (a C comment's end, in a
    kernel's code) is written as HTML's ``*&#47;`` and read back as rendered."""
    from ipycompile.views.page_files import parts_in_file, write_page

    code = "<pre>x = 1; /* a comment */ y = 2 */</pre>"

    def render(chunks):
        return "".join(f'<div data-ipyc-c="{chunks.add(code + str(i))}"></div>' for i in range(3))

    written = write_page(str(tmp_path / "c.html"), "", render, limit=10)
    text = (tmp_path / "c_files" / "0.js").read_text(encoding="utf-8")
    assert text.count("*/") == 3 and text.count("*&#47;") == 6  # each part's comment's own end, and none other
    assert parts_in_file(text) == {str(i): code + str(i) for i in range(3)}
    assert written[1:] == [str(tmp_path / "c_files" / "0.js")]
