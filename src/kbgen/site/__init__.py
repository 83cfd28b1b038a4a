"""The site: records to Markdown pages, rendered, made safe and written for mkdocs.

``data`` gathers what every page may show; ``pages`` plans which pages exist; ``render`` fills the
Jinja templates (the environment and text filters of :mod:`kbgen.templating`, with ``filters``
and ``charts`` for links, marks and SVG); ``fleet`` plans the Fleet pages from kb/fleet/;
:mod:`kbgen.mdsafe` turns untrusted text into inert Markdown; ``rawhtml`` keeps the
templates' own HTML blocks out of Markdown; ``sanitize`` cleans the HTML mkdocs makes of it;
``output`` writes pages to a folder; ``plugin`` is the mkdocs plugin that serves it all, with
``navmemo`` (the navigation rendered once) and ``devserver`` (what the preview answers). Nothing
here is imported when kbgen starts: mkdocs, jinja2 and nh3 load only when a page is made.
"""
