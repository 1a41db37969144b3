"""Write the bundled PDF sample SDS (``samples/duraglide_nonstick_primer_sds.pdf``).

The PDF is written by hand, byte by byte, so that the committed file is reproducible without a
PDF library: one page, the standard Helvetica font (no embedding) and a single text content
stream, which is all pypdf needs to extract the text again. Run it from the repository root::

    python integrations/demo/pfas/data/make_pdf_sample.py

Re-running it rewrites the same bytes (no dates, no random ids), and a test checks that.
"""

from __future__ import annotations

from pathlib import Path

PDF_PATH = Path(__file__).parent / "samples" / "duraglide_nonstick_primer_sds.pdf"

# ASCII only: the standard 14 fonts with WinAnsiEncoding have no "≥", so ranges use "<" / "-".
LINES: tuple[str, ...] = (
    "SAFETY DATA SHEET",
    "according to Regulation (EC) No 1907/2006 (REACH), Annex II",
    "Revision date: 2024-06-10   Version: 4.0",
    "",
    "SECTION 1: Identification of the substance/mixture and of the company/undertaking",
    "1.1 Product identifier",
    "Product name: DuraGlide Non-Stick Coating Primer (waterborne, grey)",
    "1.2 Relevant identified uses: Industrial spray application of non-stick cookware coatings.",
    "1.3 Supplier: Example Coatings B.V. (fictitious supplier for demonstration)",
    "1.4 Emergency telephone number: +00 000 000 004 (demonstration only)",
    "",
    "SECTION 2: Hazards identification",
    "2.1 Classification according to Regulation (EC) No 1272/2008: Repr. 1B, H360D",
    "2.2 Signal word: Danger. H360D May damage the unborn child.",
    "",
    "SECTION 3: Composition/information on ingredients",
    "3.2 Mixtures",
    "Chemical name                                          CAS No.        Concentration",
    "Water                                                  7732-18-5      40 - 60 %",
    "Polytetrafluoroethylene                                9002-84-0      20 - 30 %",
    "1-Methyl-2-pyrrolidone                                 872-50-4       3 - 7 %",
    "Titanium dioxide                                       13463-67-7     1 - 5 %",
    "Carbon black                                           1333-86-4      < 1 %",
    "2,3,3,3-Tetrafluoro-2-(heptafluoropropoxy)propanoic acid  13252-13-6  < 0.1 %",
    "",
    "SECTION 4: First aid measures",
    "4.1 General advice: Show this safety data sheet to the doctor in attendance.",
    "Inhalation: Remove to fresh air. Polymer fume fever may follow overheating above 400 C.",
)


def _escape(text: str) -> str:
    """Escape the three characters that are special inside a PDF literal string."""
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _content_stream(lines: tuple[str, ...]) -> bytes:
    """One BT/ET block: 9 pt Helvetica, 12 pt leading, one ``Tj`` per line."""
    ops = ["BT", "/F1 9 Tf", "12 TL", "40 800 Td"]
    for line in lines:
        ops.append(f"({_escape(line)}) Tj T*")
    ops.append("ET")
    return ("\n".join(ops) + "\n").encode("ascii")


def build_pdf(lines: tuple[str, ...] = LINES) -> bytes:
    """Return the bytes of a one-page PDF 1.4 file showing ``lines``.

    Args:
        lines: The text lines, top to bottom; ASCII only.

    Returns:
        A complete PDF with a correct cross-reference table.
    """
    stream = _content_stream(lines)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"endstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref_at = len(out)
    out += b"xref\n0 %d\n" % (len(objects) + 1)
    out += b"0000000000 65535 f \n"
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\n" % (len(objects) + 1)
    out += b"startxref\n%d\n%%%%EOF\n" % xref_at
    return bytes(out)


def main() -> None:
    """Write :data:`PDF_PATH`."""
    PDF_PATH.write_bytes(build_pdf())
    print(f"wrote {PDF_PATH}")


if __name__ == "__main__":
    main()
