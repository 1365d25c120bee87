"""Minimal, in-place edits of a libvirt domain XML document.

The domain XML is parsed for structure only (expat, which reports where each element
starts and ends); an edit then changes just the text of one start tag or inserts/removes
one element with its line. Everything else (quoting, self-closing tags, `qemu:` and
`libosinfo:` namespaces, comments, indentation) stays byte for byte, so an edit followed
by its inverse gives back the original document. ElementTree would re-serialise the whole
document (double quotes, `ns0:` prefixes), which is why it is not used to write.
"""
from __future__ import annotations

import re
import xml.parsers.expat
from dataclasses import dataclass, field

_ATTR = re.compile(r"""(\s+)([A-Za-z_][\w:.-]*)(\s*=\s*)("[^"]*"|'[^']*')""")


class XmlEditError(ValueError):
    """The document cannot be parsed, or the edit does not fit it."""


@dataclass
class Element:
    """One element: its path of names from the root and where it sits in the text."""

    path: tuple[str, ...]
    attrs: dict[str, str]
    start: int  # index of '<' of the start tag
    tag_end: int  # index just after the start tag's '>'
    end: int = -1  # index just after the element (its end tag, or the start tag when empty)
    parent: int = -1  # index in the element list, -1 for the root
    children: list[int] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path[-1]

    @property
    def empty(self) -> bool:
        """Written as one self-closing tag (<driver queues='4'/>)."""
        return self.end == self.tag_end


def _tag_close(text: str, start: int) -> int:
    """Index just after the '>' closing the tag that starts at `start` (quotes respected)."""
    quote = ""
    for i in range(start + 1, len(text)):
        c = text[i]
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == ">":
            return i + 1
    raise XmlEditError("unterminated tag")


def elements(text: str) -> list[Element]:
    """Every element of the document, in document order, with character offsets."""
    data = text.encode("utf-8")
    # expat reports byte offsets; map them back to character offsets
    char_at = _byte_to_char(text) if len(data) != len(text) else None
    out: list[Element] = []
    stack: list[int] = []
    parser = xml.parsers.expat.ParserCreate()
    parser.ordered_attributes = False

    def pos() -> int:
        b = parser.CurrentByteIndex
        return char_at[b] if char_at is not None else b

    def start(name: str, attrs: dict[str, str]) -> None:
        s = pos()
        parent = stack[-1] if stack else -1
        path = (out[parent].path if parent >= 0 else ()) + (name,)
        out.append(Element(path, dict(attrs), s, _tag_close(text, s), parent=parent))
        if parent >= 0:
            out[parent].children.append(len(out) - 1)
        stack.append(len(out) - 1)

    def end(name: str) -> None:
        el = out[stack.pop()]
        p = pos()
        # an empty-element tag ends where its start tag does (expat reports that offset)
        el.end = el.tag_end if text[el.tag_end - 2:el.tag_end] == "/>" else _tag_close(text, p)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as e:
        raise XmlEditError(f"not well-formed XML ({e})") from None
    return out


def _byte_to_char(text: str) -> dict[int, int]:
    out, b = {}, 0
    for i, c in enumerate(text):
        out[b] = i
        b += len(c.encode("utf-8"))
    out[b] = len(text)
    return out


def find(els: list[Element], path: tuple[str, ...]) -> list[Element]:
    return [e for e in els if e.path == path]


def child(els: list[Element], parent: Element, name: str) -> Element | None:
    return next((els[i] for i in parent.children if els[i].name == name), None)


def children(els: list[Element], parent: Element, name: str) -> list[Element]:
    return [els[i] for i in parent.children if els[i].name == name]


def start_tag(text: str, el: Element) -> str:
    return text[el.start:el.tag_end]


def quote_of(tag: str, default: str = "'") -> str:
    """The quote character the tag's attributes use (libvirt writes single quotes)."""
    m = _ATTR.search(tag)
    return m.group(4)[0] if m else default


def set_attr(tag: str, name: str, value: str, before: tuple[str, ...] = (), quote: str = "'") -> str:
    """The start tag with attribute `name` set to `value`: an existing one keeps its place
    and quote; a new one goes before the first attribute named in `before` (libvirt's own
    order), else last, quoted like the tag's other attributes."""
    for m in _ATTR.finditer(tag):
        if m.group(2) == name:
            q = m.group(4)[0]
            return tag[:m.start(4)] + q + value + q + tag[m.end(4):]
    q = quote_of(tag, quote)
    new = f" {name}={q}{value}{q}"
    for m in _ATTR.finditer(tag):
        if m.group(2) in before:
            return tag[:m.start()] + new + tag[m.start():]
    cut = len(tag) - (2 if tag.endswith("/>") else 1)
    while cut > 0 and tag[cut - 1].isspace():  # '<driver />': keep the space before '/>'
        cut -= 1
    return tag[:cut] + new + tag[cut:]


def del_attr(tag: str, name: str) -> str:
    """The start tag without attribute `name` (and the blank before it)."""
    for m in _ATTR.finditer(tag):
        if m.group(2) == name:
            return tag[:m.start()] + tag[m.end():]
    return tag


def attr_names(tag: str) -> list[str]:
    return [m.group(2) for m in _ATTR.finditer(tag)]


def replace_tag(text: str, el: Element, tag: str) -> str:
    return text[:el.start] + tag + text[el.tag_end:]


def insert_after(text: str, sibling: Element, element_text: str) -> str:
    """Insert an element on its own line after `sibling`, indented like it."""
    line = text.rfind("\n", 0, sibling.start) + 1
    indent = text[line:sibling.start]
    if indent.strip():
        indent = ""
    return text[:sibling.end] + "\n" + indent + element_text + text[sibling.end:]


def remove(text: str, el: Element) -> str:
    """Remove an element; when it has a line of its own, the line goes too (the inverse
    of insert_after)."""
    line = text.rfind("\n", 0, el.start)
    if line >= 0 and not text[line + 1:el.start].strip():
        return text[:line] + text[el.end:]
    return text[:el.start] + text[el.end:]
