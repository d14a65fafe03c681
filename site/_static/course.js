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

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
