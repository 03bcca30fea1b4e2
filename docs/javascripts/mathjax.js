// MathJax 3 for the whole site: \(...\) from pymdownx.arithmatex in the markdown pages, and $...$ in the tour's
// notebooks (nbconvert leaves their maths as written). Inside the page's content only those two are typeset.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"], ["$", "$"]],
    displayMath: [["\\[", "\\]"], ["$$", "$$"]],
    processEscapes: true,
    processEnvironments: true
  },
  options: {
    ignoreHtmlClass: "md-typeset",
    processHtmlClass: "arithmatex|jp-MarkdownOutput"
  }
};

document$.subscribe(() => {
  if (!MathJax.typesetPromise) return;  // the first page: MathJax typesets it when it loads
  MathJax.startup.output.clearCache();
  MathJax.typesetClear();
  MathJax.texReset();
  MathJax.typesetPromise();
});
