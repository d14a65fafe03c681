/* Course site: the article header's sidebar buttons (☰ and "contents"), made to work.
 *
 * sphinx-book-theme 1.3.0 renders its own .primary-toggle and .secondary-toggle in the article header, and
 * pydata-sphinx-theme 0.17.1 (which it pins) adds a second pair in the page header, hidden by the book
 * theme. The base theme binds only the first of each (document.querySelector), the hidden one, so tapping
 * the visible buttons did nothing but show a tooltip (pydata-sphinx-theme issue 2451). Here each visible
 * button passes its tap to the bound one, which opens the theme's drawer (<dialog>); on a wide screen,
 * where the chapter menu is a column beside the text, ☰ hides and shows that column instead.
 */
(function () {
  "use strict";
  const WIDE = window.matchMedia("(min-width: 960px)");

  function setup() {
    const sidebar = document.getElementById("pst-primary-sidebar");
    for (const selector of [".primary-toggle", ".secondary-toggle"]) {
      const buttons = Array.from(document.querySelectorAll(selector));
      const bound = buttons[0];   // the one the theme listens to
      if (!bound) continue;
      for (const button of buttons.slice(1)) {
        if (selector === ".primary-toggle" && sidebar) {
          button.setAttribute("aria-controls", "pst-primary-sidebar");
          button.setAttribute("aria-expanded", String(!sidebar.classList.contains("course-sidebar-hidden")));
        }
        button.addEventListener("click", (event) => {
          event.preventDefault();
          event.stopPropagation();
          button.blur();   // no lingering tooltip
          if (selector === ".primary-toggle" && sidebar && WIDE.matches) {
            const hidden = sidebar.classList.toggle("course-sidebar-hidden");
            button.setAttribute("aria-expanded", String(!hidden));
          } else {
            bound.click();
          }
        });
      }
    }
  }

  // On a phone the contents drawer (a <dialog>) stayed open over the section a tap on it jumped to: close it.
  function closeOnJump() {
    const drawer = document.getElementById("pst-secondary-sidebar-modal");
    if (!drawer) return;
    drawer.addEventListener("click", (event) => {
      const link = event.target.closest("a[href]");
      if (link && drawer.open && link.getAttribute("href").includes("#")) drawer.close();
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => { setup(); closeOnJump(); });
  else { setup(); closeOnJump(); }
})();

/* Search: a result's summary is the text around the words searched for (issue 41, "weak search snippets").
 *
 * Sphinx 7.4's searchtools.js takes a result's summary from the page's [role="main"], which in this theme is
 * the whole <main>: the launch and download buttons, then the page's contents list. It looks for the query's
 * *stemmed* words in it ("breviti", "penalti"), which the text does not contain, and then shows the first 240
 * characters: "...Colab" or the contents list, not the hit. Here, on the search page only, the summary is
 * taken from the article (or the section the hit is in) and centred on the words as typed: the phrase first,
 * else the first of its words, else a stemmed word, as Sphinx does.
 */
(function () {
  "use strict";
  const SPAN = 240;

  function articleText(htmlString, anchor) {
    const doc = new DOMParser().parseFromString(htmlString, "text/html");
    for (const el of doc.querySelectorAll(".headerlink, script, style")) el.remove();
    const article = doc.querySelector("article.bd-article") || doc.querySelector('[role="main"]');
    let root = article;
    if (anchor && article) {
      try { root = article.querySelector(anchor) || article; } catch (e) { root = article; }
    }
    // the maths' TeX delimiters (\( \) \[ \]) are not typeset in a snippet: left out
    return root ? root.textContent.replace(/\\[()[\]]/g, "").replace(/\s+/g, " ").trim() : "";
  }

  // Opened from files (file://), the browser lets no page fetch another, so a result's snippet cannot be read: the
  // results are listed without snippets (no failed fetch), and the page says how to have them.
  if (window.location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
    DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
  }
  window.addEventListener("DOMContentLoaded", () => {
    if (typeof Search === "undefined" || !document.getElementById("search-results")) return;
    if (window.location.protocol === "file:") {
      const note = document.createElement("p");
      note.className = "course-search-note";
      note.textContent = "Opened from files, the search lists the pages without the text around each hit; served " +
        "over http (python -m http.server, in the site's folder) it shows it.";
      document.getElementById("search-results").before(note);
    }
    const typed = (new URLSearchParams(window.location.search).get("q") || "")
      .toLowerCase().split(/\s+/).filter(Boolean);
    Search.htmlToText = articleText;
    Search.makeSearchSummary = (htmlString, keywords, anchor) => {
      const text = articleText(htmlString, anchor);
      if (text === "") return null;
      const lower = text.toLowerCase();
      let at = typed.length ? lower.indexOf(typed.join(" ")) : -1;
      for (const word of [...typed, ...keywords]) {
        if (at > -1) break;
        at = lower.indexOf(String(word).toLowerCase());
      }
      let start = Math.max(at - SPAN / 3, 0);
      if (start > 0) start = Math.max(text.indexOf(" ", start) + 1, start);   // begin at a word
      const summary = document.createElement("p");
      summary.classList.add("context");
      summary.textContent = (start > 0 ? "..." : "") + text.substr(start, SPAN).trim() +
        (start + SPAN < text.length ? "..." : "");
      return summary;
    };
  });
})();

/* "Check yourself" quizzes (courseware/quiz.py): a number box opens a phone's number keyboard (inputmode) and has a
 * Check button, since a phone's keyboard may send no Enter keypress, the only way jupyterquiz submits. The quiz
 * outputs committed before courseware/quiz.py did this themselves get it here; a box done once is left alone. */
(function () {
  "use strict";
  function ready(root) {
    root.querySelectorAll(".Quiz .Input-text").forEach(function (box) {
      if (box.dataset.courseReady) return;
      box.dataset.courseReady = "1";
      box.setAttribute("aria-label", "Your answer, a number; press Enter or Check");
      box.setAttribute("inputmode", "decimal");
      box.setAttribute("enterkeyhint", "done");
      const check = document.createElement("button");
      check.type = "button";
      check.className = "course-quiz-check";
      check.textContent = "Check";
      check.addEventListener("click", function () {
        if (box.onkeypress) box.onkeypress.call(box, {which: 13, keyCode: 13});
      });
      box.insertAdjacentElement("afterend", check);
    });
  }
  function watch() {
    ready(document);
    new MutationObserver(function () { ready(document); }).observe(document.body, {childList: true, subtree: true});
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch); else watch();
})();
