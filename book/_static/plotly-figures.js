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
