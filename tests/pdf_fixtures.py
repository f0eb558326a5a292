"""PDFs built with reportlab in the tests: a three-page handbook with a heading hierarchy, a
ruled table that runs over a page break (its header repeated) and a running header and footer;
no title in its metadata (reportlab writes "(anonymous)")."""

from __future__ import annotations

from pathlib import Path

# Member → Slack channel: enough rows that the table runs onto the second page; the CLO's row
# lies past the break.
MEMBERS = [(f"Lead {n:02d}", f"#lead-{n:02d}") for n in range(1, 31)] + [
    ("CFO", "#finance"), ("CLO", "#legal"), ("CISO", "#ciso"), ("CMO", "#cmo")]

INTRO = ("This handbook says how the Falcon site is kept safe: who may enter, how visitors are "
         "escorted and whom to call when something goes wrong.")
VISITORS = ("Visitors are escorted at all times by the employee who invited them. A visitor who "
            "is found alone is walked back to the reception desk.")
BADGES = ("Visitor badges are yellow and expire at midnight. Lost badges are reported to the "
          "security desk on the same day.")
REPORTING = ("Incidents are reported within one hour through the incident form. The on-call "
             "security officer confirms receipt within fifteen minutes.")


def security_handbook(path: Path) -> Path:
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    body = ParagraphStyle("body", fontName="Helvetica", fontSize=10, leading=13, spaceAfter=9)
    h1 = ParagraphStyle("h1", fontName="Helvetica-Bold", fontSize=20, leading=24, spaceAfter=12)
    h2 = ParagraphStyle("h2", fontName="Helvetica-Bold", fontSize=15, leading=19, spaceBefore=8, spaceAfter=8)
    h3 = ParagraphStyle("h3", fontName="Helvetica-Bold", fontSize=12, leading=15, spaceBefore=6, spaceAfter=6)

    def edges(canvas, doc) -> None:  # the running header and footer
        canvas.saveState()
        canvas.setFont("Helvetica", 8)
        canvas.drawString(72, A4[1] - 40, "ACME Corp - Internal use only")
        canvas.drawString(72, 30, f"Page {doc.page}")
        canvas.restoreState()

    table = Table([("Member", "Channel"), *MEMBERS], repeatRows=1, colWidths=(160, 160))
    table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black),
                               ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold"),
                               ("FONTNAME", (0, 1), (-1, -1), "Helvetica"), ("FONTSIZE", (0, 0), (-1, -1), 10)]))
    story = [
        Paragraph("Security Handbook", h1), Paragraph(INTRO, body),
        Paragraph("Visitors", h2), Paragraph(VISITORS, body),
        Paragraph("Badges", h3), Paragraph(BADGES, body),
        Paragraph("Escalation contacts", h2),
        Paragraph("Each executive is reached on their own Slack channel, listed below.", body),
        Spacer(1, 6), table,
        PageBreak(), Paragraph("Incident reporting", h2), Paragraph(REPORTING, body),
    ]
    SimpleDocTemplate(str(path), pagesize=A4).build(story, onFirstPage=edges, onLaterPages=edges)
    return path
