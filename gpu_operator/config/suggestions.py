"""The name a person most likely meant: a misspelt key, a different case, a missing prefix, a look-alike letter.

Messages that refuse a name say which one was meant when one stands out, so a fix is a copy, not a search:

* the same name in another case (`Mixed` for `mixed`), or with a prefix left out (`ND96isr_H100_v5` for
  `Standard_ND96isr_H100_v5`);
* a name written with a letter that only looks like the right one: a Cyrillic `Н` (U+041D) for a Latin `H`, a
  Greek `Ο` for `O`, a fullwidth `１`, a typographic dash or quote, a no-break or zero-width space (a copy from a
  chat or a PDF). Such a name is named with the character and its Unicode name, since it cannot be seen;
* a close spelling (`verison` for `version`), by difflib's similarity ratio.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable

__all__ = ["ascii_spelling", "did_you_mean", "lookalike_note", "nearest"]

#: Letters and marks that look like ASCII ones and that NFKC normalisation does not turn into them.
_LOOKALIKES: dict[str, str] = {
    **dict(zip("АВЕКМНОРСТХУЅІЈаеорсхуѕіјԁһԛԝ", "ABEKMHOPCTXYSIJaeopcxysijdhqw", strict=True)),  # Cyrillic
    **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧοϲνᴦ", "ABEZHIKMNOPTYXocvr", strict=True)),  # Greek
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-",  # dashes, minus
    "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',  # typographic quotes
    "\u00a0": " ", "\u200b": "", "\u200c": "", "\u200d": "", "\ufeff": "",  # no-break and zero-width spaces
}
#: How close a spelling must be to be offered (difflib's ratio); 0.75 takes one or two typos in a short key.
_CLOSE = 0.75


def ascii_spelling(text: str) -> str:
    """`text` with every look-alike character replaced by the ASCII one it looks like (NFKC first)."""
    return "".join(_LOOKALIKES.get(char, char) for char in unicodedata.normalize("NFKC", text))


def lookalike_note(text: str) -> str | None:
    """`it contains 'Н' (U+041D CYRILLIC CAPITAL LETTER EN), which looks like 'H'`, or None for plain text."""
    found = []
    for char in dict.fromkeys(text):
        if char.isascii():
            continue
        plain = ascii_spelling(char)
        if plain != char:
            name = unicodedata.name(char, "an unnamed character")
            looks = f"looks like {plain!r}" if plain else "is invisible"
            found.append(f"{char!r} (U+{ord(char):04X} {name}), which {looks}")
    return f"it contains {'; '.join(found)}" if found else None


def nearest(text: str, candidates: Iterable[str], prefixes: Iterable[str] = ()) -> str | None:
    """The candidate `text` most likely means: the same in another case or spelt with look-alikes, or the closest
    spelling, compared without the `prefixes` the candidates share (so `ND96isr_H100_v5` finds
    `Standard_ND96isr_H100_v5`); None when nothing is close."""
    folded_prefixes = [prefix.casefold() for prefix in prefixes]
    by_folded = {option.casefold(): option for option in candidates}
    plain = ascii_spelling(text).strip().casefold()
    if plain in by_folded:
        found = by_folded[plain]
        return found if found != text else None
    bare = {_without(folded, folded_prefixes): option for folded, option in by_folded.items()}
    close = difflib.get_close_matches(_without(plain, folded_prefixes), list(bare), n=1, cutoff=_CLOSE)
    return bare[close[0]] if close else None


def _without(text: str, prefixes: Iterable[str]) -> str:
    return next((text[len(prefix):] for prefix in prefixes if text.startswith(prefix)), text)


def did_you_mean(text: str, candidates: Iterable[str], prefixes: Iterable[str] = ()) -> str:
    """`did you mean 'x'?` (and what looks alike in `text`), or "" when nothing stands out."""
    found = nearest(text, candidates, prefixes)
    note = lookalike_note(text)
    parts = [f"did you mean {found!r}?"] if found is not None else []
    if note is not None:
        parts.append(f"({note})")
    return " ".join(parts)
