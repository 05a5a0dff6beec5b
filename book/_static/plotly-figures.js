// Draws every plotly figure of the page with the one local plotly.js (loaded before this file).
// The figure JSON sits in a <script type="application/json"> next to its <div class="teachllm-plotly">.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("div.teachllm-plotly").forEach(function (div) {
    var spec = document.getElementById(div.id + "-json");
    if (!spec || typeof Plotly === "undefined") { return; }
    var fig = JSON.parse(spec.textContent);
    var layout = Object.assign({}, fig.layout || {});
    delete layout.template_is_default;
    Plotly.newPlot(div, fig.data || [], layout, {responsive: true, displaylogo: false});
  });
});

// On paper a figure is its static PNG: the notebook's picture of it, which the page already holds inside the
// figure's <noscript>. Before printing, each figure gets an <img> made from it; the print CSS shows that and
// hides the live figure (its toolbar included). `make pdf` fires the same event.
window.addEventListener("beforeprint", function () {
  document.querySelectorAll("div.teachllm-plotly").forEach(function (div) {
    var noscript = div.querySelector("noscript");
    if (!noscript || div.nextElementSibling && div.nextElementSibling.classList.contains("teachllm-plotly-print")) {
      return;
    }
    var holder = document.createElement("div");
    holder.innerHTML = noscript.textContent;
    var img = holder.querySelector("img");
    if (!img) { return; }
    img.className = "teachllm-plotly-print";
    div.insertAdjacentElement("afterend", img);
  });
});
