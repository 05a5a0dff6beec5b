// The book's widgets, with no Python kernel: every <div class="teachllm-live"> on the page becomes the widget
// its notebook shows in JupyterLab, with the same controls and labels, drawn by the one local plotly.js.
//
// Each div has a <script type="application/json" id="<div id>-json"> beside it: the widget's *static form*,
// saved when the notebooks were built (teachllm/viz/static.py says what it holds). Two kinds:
//
//   frames   (BPEStepper, AttentionExplorer, CacheGrowthView, StepThrough, PhaseTimeline, RooflineView,
//            IterationTimeline, BlockTableView): one precomputed figure per setting of the controls; moving a
//            control looks the frame up and draws it.
//   Quiz:    a chapter's questions with their answers and explanations; the page checks the reader's answers.
//   DistributionExplorer: the model's real next-token logits (all of them, float32); every control runs the
//            same pipeline as teachllm.sampling.process_logits here, in the page, and draws the bars.
//
// The contract the tests read: the root element carries data-teachllm-widget="<class name>"; the
// distribution explorer also keeps data-prompt-ids, data-params (SamplingParams field → value) and
// data-probs (token id → probability after processing, for the tokens shown) up to date, and its controls
// are <input>s named after the SamplingParams fields. window.teachllm.sampling holds the pipeline.
(function () {
  "use strict";

  // ---- helpers ------------------------------------------------------------------------------------------
  function unpack(value, table) {  // the inverse of static.pack: {"$": i} is table[i]
    if (Array.isArray(value)) { return value.map(function (v) { return unpack(v, table); }); }
    if (value !== null && typeof value === "object") {
      var keys = Object.keys(value);
      if (keys.length === 1 && keys[0] === "$") { return unpack(table[value.$], table); }
      var out = {};
      keys.forEach(function (k) { out[k] = unpack(value[k], table); });
      return out;
    }
    return value;
  }

  function format(template, fields) {  // Python's str.format for the specs used here: {x}, {x:.2f}, {x:,}
    return template.replace(/\{(\w+)(?::([^}]*))?\}/g, function (_, name, spec) {
      var v = fields[name];
      if (spec === undefined || spec === "") { return String(v); }
      var fixed = /^\.(\d+)f$/.exec(spec);
      if (fixed) { return Number(v).toFixed(Number(fixed[1])); }
      if (spec === ",") { return Number(v).toLocaleString("en-US"); }
      throw new Error("teachllm-widgets: unknown format " + spec);
    });
  }

  function element(tag, attributes, children) {
    var e = document.createElement(tag);
    Object.keys(attributes || {}).forEach(function (k) {
      if (k === "text") { e.textContent = attributes[k]; } else if (k === "html") { e.innerHTML = attributes[k]; }
      else { e.setAttribute(k, attributes[k]); }
    });
    (children || []).forEach(function (c) { e.appendChild(c); });
    return e;
  }

  function draw(div, figure) {
    var layout = Object.assign({}, figure.layout || {});
    delete layout.template_is_default;
    return Plotly.react(div, figure.data || [], layout, {responsive: true, displaylogo: false});
  }

  function round(x, digits) { var f = Math.pow(10, digits); return Math.round(x * f) / f; }

  // A control row: a slider (<input type=range> and its value), a select, a number box, or buttons.
  function control(c, value, changed) {
    var id = "teachllm-" + Math.random().toString(36).slice(2);
    if (c.kind === "slider") {
      var input = element("input", {type: "range", name: c.name, id: id, min: c.min, max: c.max, step: c.step,
                                    value: value});
      var shown = element("output", {"for": id, text: String(value)});
      input.addEventListener("input", function () { shown.textContent = input.value; changed(c.name, input); });
      return element("label", {"class": "teachllm-control teachllm-" + c.name},
                     [element("span", {text: c.label}), input, shown]);
    }
    if (c.kind === "select") {
      var select = element("select", {name: c.name, id: id});
      c.options.forEach(function (o) {
        var option = element("option", {value: String(o[1]), text: o[0]});
        if (String(o[1]) === String(value)) { option.selected = true; }
        select.appendChild(option);
      });
      select.addEventListener("change", function () { changed(c.name, select); });
      return element("label", {"class": "teachllm-control teachllm-" + c.name}, [element("span", {text: c.label}), select]);
    }
    if (c.kind === "number") {
      var box = element("input", {type: "number", name: c.name, id: id, value: value, step: 1});
      box.addEventListener("change", function () { changed(c.name, box); });
      return element("label", {"class": "teachllm-control teachllm-" + c.name}, [element("span", {text: c.label}), box]);
    }
    throw new Error("teachllm-widgets: unknown control " + c.kind);
  }

  // ---- widgets made of frames ------------------------------------------------------------------------
  function framesWidget(root, form) {
    var named = form.controls.filter(function (c) { return c.name; });
    var state = {};
    named.forEach(function (c) { state[c.name] = c.value; });
    var inputs = {};
    var figure = element("div", {"class": "teachllm-live-figure"});
    var note = element("div", {"class": "teachllm-live-note"});
    var htmlBoxes = {};
    var rows = [];
    var timer = null;

    function frame() { return unpack(form.frames[named.map(function (c) { return state[c.name]; }).join(",")], form.table); }

    function show() {
      var f = frame();
      Object.keys(f.html || {}).forEach(function (k) {
        if (!htmlBoxes[k]) { htmlBoxes[k] = element("div", {"class": "teachllm-live-" + k}); figure.before(htmlBoxes[k]); }
        htmlBoxes[k].innerHTML = f.html[k];
      });
      root.dataset.state = JSON.stringify(state);
      return f.figure ? draw(figure, f.figure) : Promise.resolve();
    }

    function set(name, value) {  // move a control (and its input) to `value`, then draw
      state[name] = value;
      var input = inputs[name];
      if (input) {
        input.value = String(value);
        if (input.nextElementSibling && input.nextElementSibling.tagName === "OUTPUT") {
          input.nextElementSibling.textContent = String(value);
        }
      }
      return show();
    }

    function act(c, what) {
      var target = named.filter(function (n) { return n.name === c.target; })[0];
      var now = Number(state[c.target]);
      if (timer) { clearTimeout(timer); timer = null; }
      note.textContent = "";
      if (what === "first") { set(c.target, target.min); }
      if (what === "previous") { set(c.target, Math.max(now - 1, target.min)); }
      if (what === "next") { set(c.target, Math.min(now + 1, target.max)); }
      if (what === "last") { set(c.target, target.max); }
      if (what === "replay") { note.textContent = form.replay; }
      if (what === "run") {  // step to the end one frame at a time, as the widget's figure grows
        (function step() {
          if (Number(state[c.target]) >= target.max) { timer = null; return; }
          set(c.target, Number(state[c.target]) + 1);
          timer = setTimeout(step, 120);
        })();
      }
    }

    form.controls.forEach(function (c) {
      if (c.kind === "state") { return; }
      if (c.kind === "buttons") {
        rows.push(element("div", {"class": "teachllm-buttons"}, c.actions.map(function (a) {
          var b = element("button", {type: "button", "data-action": a[1], text: a[0]});
          b.addEventListener("click", function () { act(c, a[1]); });
          return b;
        })));
        return;
      }
      var row = control(c, c.value, function (name, input) {
        var numeric = typeof c.value === "number";
        state[name] = numeric ? Number(input.value) : input.value;
        show();
      });
      inputs[c.name] = row.querySelector("input, select");
      rows.push(row);
    });
    root.appendChild(element("div", {"class": "teachllm-controls"}, rows));
    root.appendChild(note);
    root.appendChild(figure);
    root.teachllm = {set: set, state: state, frame: frame, figure: figure};
    return show();
  }

  // ---- the sampling pipeline, as teachllm.sampling computes it --------------------------------------------
  // Logits are float32 in teachllm; every elementwise step here is rounded to float32 (Math.fround) as
  // torch rounds it, so the logits that reach softmax are the same numbers. Softmax and sums run in float64.
  var f32 = Math.fround;
  var NEG = -Infinity;
  var GREEDY_BELOW = 1e-5;

  function softmax(logits) {
    var max = NEG, i, sum = 0, out = new Float64Array(logits.length);
    for (i = 0; i < logits.length; i++) { if (logits[i] > max) { max = logits[i]; } }
    for (i = 0; i < logits.length; i++) { out[i] = logits[i] === NEG ? 0 : Math.exp(logits[i] - max); sum += out[i]; }
    for (i = 0; i < logits.length; i++) { out[i] /= sum; }
    return out;
  }

  function repetition(logits, seen, r) {  // CTRL: logit / r if > 0, else logit · r, for every token seen
    if (r === 1) { return logits; }
    var out = Float32Array.from(logits);
    var r32 = f32(r);
    Array.from(new Set(seen)).forEach(function (t) { out[t] = out[t] > 0 ? f32(out[t] / r32) : f32(out[t] * r32); });
    return out;
  }

  function presenceFrequency(logits, output, presence, frequency) {  // OpenAI: − c·frequency − (c > 0)·presence
    if (presence === 0 && frequency === 0) { return logits; }
    var out = Float32Array.from(logits), counts = {};
    output.forEach(function (t) { counts[t] = (counts[t] || 0) + 1; });
    Object.keys(counts).forEach(function (t) {
      out[t] = f32(out[t] - f32(f32(counts[t] * f32(frequency)) + f32(presence)));
    });
    return out;
  }

  function temperature(logits, t) { var t32 = f32(t); return logits.map(function (l) { return f32(l / t32); }); }

  function topK(logits, k) {  // keep logit ≥ the k-th largest (ties at the boundary survive)
    if (k <= 0) { return logits; }
    var sorted = Float32Array.from(logits).sort();
    var kth = sorted[sorted.length - Math.min(k, sorted.length)];
    return logits.map(function (l) { return l < kth ? NEG : l; });
  }

  function topP(logits, p) {  // sort ascending; drop the tokens whose cumulative probability ≤ 1 − p
    if (p >= 1) { return logits; }
    var order = Array.from(logits.keys()).sort(function (a, b) { return logits[a] - logits[b] || a - b; });
    var sorted = order.map(function (i) { return logits[i]; });
    var probs = softmax(sorted), out = Float32Array.from(logits), cumulative = 0, limit = f32(1 - p);
    for (var j = 0; j < order.length - 1; j++) {  // the most likely token always stays
      cumulative += f32(probs[j]);
      if (f32(cumulative) <= limit) { out[order[j]] = NEG; }
    }
    return out;
  }

  function minP(logits, p) {  // drop tokens less likely than p × the top token's probability
    if (p <= 0) { return logits; }
    var probs = softmax(logits), max = 0, i;
    for (i = 0; i < probs.length; i++) { if (probs[i] > max) { max = probs[i]; } }
    var limit = f32(f32(p) * f32(max)), out = Float32Array.from(logits);
    for (i = 0; i < probs.length; i++) { if (f32(probs[i]) < limit && probs[i] !== max) { out[i] = NEG; } }
    return out;
  }

  function penalties(logits, params, promptIds, outputIds) {
    var out = repetition(logits, promptIds.concat(outputIds), params.repetition_penalty);
    return presenceFrequency(out, outputIds, params.presence_penalty, params.frequency_penalty);
  }

  function argmax(values) {
    var best = 0;
    for (var i = 1; i < values.length; i++) { if (values[i] > values[best]) { best = i; } }
    return best;
  }

  function entropyBits(probs) {
    var h = 0;
    for (var i = 0; i < probs.length; i++) { if (probs[i] > 0) { h -= probs[i] * Math.log(probs[i]); } }
    return h / Math.LN2;
  }

  // data.distribution: the top_n tokens (by logit after the penalties) before and after the pipeline
  function distribution(logits, params, promptIds, outputIds, topN) {
    var greedy = params.temperature < GREEDY_BELOW;
    var penalised = penalties(logits, params, promptIds, outputIds);
    var ids = Array.from(penalised.keys()).sort(function (a, b) { return penalised[b] - penalised[a] || a - b; })
      .slice(0, topN);
    var after, beforeTopP, processed, nTopP = null, nKept, entropyAfter;
    if (greedy) {
      processed = penalised;
      after = new Float64Array(logits.length);
      after[argmax(penalised)] = 1;
      beforeTopP = penalised;
      nKept = 1; entropyAfter = 0;
    } else {
      beforeTopP = topK(temperature(penalised, params.temperature), params.top_k);
      var cut = topP(beforeTopP, params.top_p);
      if (params.top_p < 1) { nTopP = cut.filter(function (l) { return l > NEG; }).length; }
      processed = minP(cut, params.min_p);
      after = softmax(processed);
      nKept = processed.filter(function (l) { return l > NEG; }).length;
      entropyAfter = entropyBits(after);
    }
    var raw = softmax(logits), top = softmax(beforeTopP), running = 0;
    return {params: params, token_ids: ids, processed: processed, greedy: greedy,
            before: ids.map(function (i) { return raw[i]; }), after: ids.map(function (i) { return after[i]; }),
            kept: ids.map(function (i) { return greedy ? after[i] > 0 : processed[i] > NEG; }),
            cumulative: ids.map(function (i) { running += top[i]; return running; }),
            n_top_p: nTopP, n_kept: nKept, vocab_size: logits.length,
            entropy_before: entropyBits(raw), entropy_after: entropyAfter};
  }

  function mulberry32(seed) {  // a small seeded generator: the page's draws, not torch's
    var a = seed >>> 0;
    return function () {
      a = (a + 0x6D2B79F5) >>> 0;
      var t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  function sample(processed, greedy, seed) {  // → [token id, rank after processing]
    var token;
    if (greedy) { token = argmax(processed); } else {
      var probs = softmax(processed), u = mulberry32(seed)(), running = 0;
      token = argmax(processed);
      for (var i = 0; i < probs.length; i++) { running += probs[i]; if (probs[i] > 0 && running > u) { token = i; break; } }
    }
    var rank = 0;
    for (var j = 0; j < processed.length; j++) { if (processed[j] > processed[token]) { rank++; } }
    return [token, rank];
  }

  // ---- the distribution explorer ---------------------------------------------------------------------
  function decodeFloat32(base64) {
    var bytes = Uint8Array.from(atob(base64), function (c) { return c.charCodeAt(0); });
    return new Float32Array(bytes.buffer);  // little-endian, as every browser's typed arrays are on x86 and ARM
  }

  function describe(p, t) {  // figures.describe: the settings that change the distribution, in a few words
    var parts = [];
    if (p.temperature < GREEDY_BELOW) { parts.push(t["greedy (T = 0)"]); } else {
      parts.push("T = " + p.temperature.toFixed(2));
      if (p.top_k > 0) { parts.push("top-k " + p.top_k); }
      if (p.top_p < 1) { parts.push("top-p " + p.top_p.toFixed(2)); }
      if (p.min_p > 0) { parts.push("min-p " + p.min_p.toFixed(2)); }
    }
    [["repetition", p.repetition_penalty, 1], ["presence", p.presence_penalty, 0],
     ["frequency", p.frequency_penalty, 0]].forEach(function (x) {
      if (x[1] !== x[2]) { parts.push(t[x[0]] + " " + x[1].toFixed(2)); }
    });
    return parts.join(", ");
  }

  function distributionFigure(d, form, chosen) {  // figures.distribution_spec
    var t = form.strings, colors = form.colors, p = d.params, n = d.token_ids.length;
    var x = d.token_ids.map(function (_, i) { return i; });
    var labels = d.token_ids.map(function (i) { return form.labels[i] !== undefined ? form.labels[i] : String(i); });
    var names = labels.map(function (l, i) { return l + " (id " + d.token_ids[i] + ")"; });
    var r = function (v) { return v.map(function (y) { return round(y, 6); }); };
    var topPOn = d.n_top_p !== null;
    var chosenX = chosen && d.token_ids.indexOf(chosen[0]) >= 0 ? [d.token_ids.indexOf(chosen[0])] : [];
    var after = r(d.after);
    var traces = [
      {type: "bar", name: t["model (before)"], x: x, y: r(d.before), customdata: names,
       marker: {color: d.kept.map(function (k) { return k ? colors.kept : colors.removed; })},
       hovertemplate: "%{customdata}<br>" + t.model + ": %{y:.4f}<extra></extra>"},
      {type: "bar", name: t["after processing"], x: x, y: after, customdata: names, marker: {color: colors.after},
       hovertemplate: "%{customdata}<br>" + t.after + ": %{y:.4f}<extra></extra>"},
      {type: "scatter", name: t["cumulative (what top-p sees)"], x: x, y: r(d.cumulative), yaxis: "y2",
       mode: "lines+markers", line: {color: colors.cumulative, width: 1.5}, marker: {size: 4}},
      {type: "scatter", name: "top-p = " + p.top_p.toFixed(2), x: [-0.5, n - 0.5], yaxis: "y2", mode: "lines",
       y: topPOn ? [p.top_p, p.top_p] : [null, null], line: {color: colors.cumulative, dash: "dash"}, showlegend: topPOn},
      {type: "scatter", name: t.sampled, x: chosenX, y: chosenX.map(function (i) { return after[i]; }),
       mode: "markers+text", text: chosenX.map(function () { return t.sampled; }), textposition: "top center",
       marker: {symbol: "star", size: 16, color: colors.chosen}, showlegend: chosenX.length > 0}
    ];
    var shapes = [];
    [["top-k", p.top_k > 0 && !d.greedy ? p.top_k : null], ["top-p", d.n_top_p]].forEach(function (rc) {
      if (rc[1] !== null && rc[1] < n) {
        shapes.push({type: "line", x0: rc[1] - 0.5, x1: rc[1] - 0.5, y0: 0, y1: 1, yref: "paper",
                     line: {color: "#444", dash: "dot"}, label: {text: format(t["{rule} cut"], {rule: rc[0]}), textangle: -90}});
      }
    });
    var title = format(t["{settings} · entropy {before:.2f} → {after:.2f} bits · {kept:,} of {vocab:,} tokens survive"],
                       {settings: describe(p, t), before: d.entropy_before, after: d.entropy_after, kept: d.n_kept,
                        vocab: d.vocab_size});
    if (chosen) {
      var where = chosenX.length ? "" : t[", outside the chart"];
      var token = chosenX.length ? labels[chosenX[0]] : "" + chosen[0];
      title += format(t[" · sampled {token} (rank {rank}{where})"], {token: token, rank: chosen[1], where: where});
    }
    var layout = Object.assign({}, form.layout, {
      title: {text: title, font: {size: 13}}, barmode: "group", bargap: 0.15, shapes: shapes, height: 440,
      xaxis: {tickvals: x, ticktext: labels, tickangle: -45, range: [-0.5, n - 0.5]},
      yaxis: {title: {text: t.probability}, rangemode: "tozero"},
      yaxis2: {title: {text: t.cumulative}, overlaying: "y", side: "right", range: [0, 1.02], showgrid: false,
               tickvals: [0, 0.25, 0.5, 0.75, 1]},
      legend: {orientation: "h", y: 1.02, yanchor: "bottom", x: 0}, margin: {t: 90, b: 90, l: 60, r: 60}});
    return {data: traces, layout: layout};
  }

  function escapeHtml(s) { return s.replace(/[&<>"']/g, function (c) { return "&#" + c.charCodeAt(0) + ";"; }); }

  function distributionWidget(root, form) {
    var logits = decodeFloat32(form.logits);
    var t = form.strings;
    var fields = ["temperature", "top_k", "top_p", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty"];
    var params = {seed: 0};
    var inputs = {};
    var chosen = null, last = null, holding = false;
    var figure = element("div", {"class": "teachllm-live-figure"});
    var info = element("span", {"class": "teachllm-live-info"});
    var promptIds = form.prompt_ids.concat(form.output_ids);

    function redraw() {
      last = distribution(logits, params, form.prompt_ids, form.output_ids, form.top_n);
      var probs = {};
      last.token_ids.forEach(function (id, i) { probs[id] = last.after[i]; });
      root.dataset.params = JSON.stringify(params);
      root.dataset.probs = JSON.stringify(probs);
      root.dataset.kept = String(last.n_kept);
      info.innerHTML = chosen ? format(t["sampled <b>{token}</b> (id {id}, rank {rank} after processing)"],
        {token: escapeHtml(form.labels[chosen[0]] !== undefined ? form.labels[chosen[0]] : String(chosen[0])),
         id: chosen[0], rank: chosen[1]}) : t["press <i>sample</i> to draw a token with this random seed"];
      return draw(figure, distributionFigure(last, form, chosen));
    }

    function changed(name, input) {
      if (holding) { return; }
      chosen = null;
      if (name === "preset") {
        if (input.value === "custom") { return; }
        var settings = Object.assign({}, form.defaults, form.presets[input.value]);
        holding = true;
        fields.forEach(function (f) { inputs[f].value = String(settings[f]); inputs[f].dispatchEvent(new Event("input")); });
        holding = false;
        fields.forEach(function (f) { params[f] = settings[f]; });
      } else if (name === "seed") {
        params.seed = Number(input.value);
        return redraw();
      } else {
        params[name] = name === "top_k" ? parseInt(input.value, 10) : Number(input.value);
        inputs.preset.value = "custom";
      }
      redraw();
    }

    var sliders = {}, rows = {};
    form.controls.forEach(function (c) {
      if (fields.indexOf(c.name) >= 0) { params[c.name] = c.value; }
      if (c.name === "seed") { params.seed = c.value; }
      rows[c.name] = control(c, c.value, changed);
      inputs[c.name] = rows[c.name].querySelector("input, select");
      sliders[c.name] = rows[c.name];
    });
    var button = element("button", {type: "button", "class": "teachllm-sample", text: t.sample});
    button.addEventListener("click", function () {
      chosen = sample(last.processed, last.greedy, params.seed);
      redraw();
    });
    root.appendChild(element("div", {"class": "teachllm-live-heading", html: form.heading}));
    root.appendChild(rows.preset);
    root.appendChild(element("div", {"class": "teachllm-controls teachllm-columns"}, [
      element("div", {}, [element("div", {html: form.notes[0]})].concat(fields.slice(0, 4).map(function (f) { return rows[f]; }))),
      element("div", {}, [element("div", {html: form.notes[1]})].concat(fields.slice(4).map(function (f) { return rows[f]; })))]));
    root.appendChild(element("div", {"class": "teachllm-controls"}, [rows.seed, button, info]));
    root.appendChild(figure);
    root.dataset.promptIds = JSON.stringify(promptIds);
    root.teachllm = {
      kept: function () {  // every token id the pipeline keeps (probability > 0), in vocabulary order
        if (last.greedy) { return [argmax(last.processed)]; }
        var ids = [];
        for (var i = 0; i < last.processed.length; i++) { if (last.processed[i] > NEG) { ids.push(i); } }
        return ids;
      },
      distribution: function () { return last; },
      figure: figure
    };
    return redraw();
  }

  // ---- the quiz (teachllm.viz.Quiz) ------------------------------------------------------------------
  // Every question, its right answer and its explanation are in the form; "Check" compares the reader's answer
  // as Question.is_right does and writes what QuestionView.check writes. Each question's element carries
  // data-question-id, data-type and, once checked, data-result="right" or "wrong".
  function quizWidget(root, form) {
    var t = form.strings;
    root.classList.add("teachllm-quiz");
    form.questions.forEach(function (q) {
      var box = element("div", {"class": "teachllm-quiz-question", "data-question-id": q.id, "data-type": q.type});
      var input = null, radios = [];
      box.appendChild(element("div", {"class": "teachllm-quiz-text", html: q.html}));
      if (q.type === "numeric") {
        input = element("input", {type: "text", inputmode: "decimal", name: root.id + "-" + q.id,
                                  placeholder: t["a number"]});
        box.appendChild(element("div", {"class": "teachllm-quiz-answer"},
                                [input, element("span", {"class": "teachllm-quiz-unit", text: q.unit})]));
      } else {
        box.appendChild(element("div", {"class": "teachllm-quiz-answer"}, q.options.map(function (o, i) {
          var radio = element("input", {type: "radio", name: root.id + "-" + q.id, value: String(i)});
          radios.push(radio);
          return element("label", {"class": "teachllm-quiz-option"}, [radio, element("span", {html: o})]);
        })));
      }
      var button = element("button", {type: "button", "class": "teachllm-quiz-check", text: t.Check});
      var result = element("span", {"class": "teachllm-quiz-result"});
      var explanation = element("div", {"class": "teachllm-quiz-explanation", html: q.explanation});
      explanation.hidden = true;
      button.addEventListener("click", function () {
        var response = null, right;
        if (q.type === "numeric") {
          var text = input.value.replace(/,/g, "").trim();
          if (text !== "" && isFinite(Number(text))) { response = Number(text); }
        } else {
          radios.forEach(function (r) { if (r.checked) { response = Number(r.value); } });
        }
        if (response === null) {
          result.textContent = q.type === "numeric" ? t["Enter a number first."] : t["Choose an answer first."];
          return;
        }
        if (q.type === "numeric") {
          var allowed = q.tolerance === null ? q.relative_tolerance * Math.abs(q.answer) : q.tolerance;
          right = Math.abs(response - q.answer) <= allowed;
        } else {
          right = response === q.answer;
        }
        box.dataset.result = right ? "right" : "wrong";
        result.innerHTML = right ? t["✓ Right."] : format(t["✗ Not right. The answer: {answer}"], {answer: q.answer_text});
        explanation.hidden = false;
        if (window.MathJax && MathJax.typesetPromise) { MathJax.typesetPromise([result]).catch(function () {}); }
      });
      box.appendChild(element("div", {"class": "teachllm-quiz-buttons"}, [button, result]));
      box.appendChild(explanation);
      root.appendChild(box);
    });
    root.teachllm = {questions: form.questions, lang: form.lang};
    if (window.MathJax && MathJax.typesetPromise) { return MathJax.typesetPromise([root]).catch(function () {}); }
    return Promise.resolve();
  }

  // ---- on paper ---------------------------------------------------------------------------------------
  // Printed (the browser's print, and `make pdf`, which fires "beforeprint" too), a quiz is its questions with the
  // options lettered A, B, C … and, after the last question, the answer key: the right letter, or the number and
  // its unit. It is made from the page's own typeset quiz, so its math is the screen's. A cell whose code only
  // makes the widget (`from teachllm import viz` and `viz.Quiz(6)`) prints no code: the print CSS (book.css)
  // hides its input, and hides every live widget. "afterprint" takes it all away again.
  var ANSWERS = {en: "Answers", zh: "答案"};
  var LETTERS = "ABCDEFGHIJ";

  function quizOnPaper(root) {
    var questions = root.teachllm.questions;
    var paper = element("div", {"class": "teachllm-quiz-print"});
    root.querySelectorAll(".teachllm-quiz-question").forEach(function (box, k) {
      var q = questions[k];
      var item = element("div", {"class": "teachllm-quiz-print-question"},
                         [box.querySelector(".teachllm-quiz-text").cloneNode(true)]);
      if (q.type === "numeric") {
        item.appendChild(element("p", {"class": "teachllm-quiz-print-blank", text: "__________ " + q.unit}));
      } else {
        var options = box.querySelectorAll(".teachllm-quiz-option > span");
        item.appendChild(element("ol", {"class": "teachllm-quiz-print-options"},
                                 Array.prototype.map.call(options, function (o, i) {
          return element("li", {}, [element("span", {"class": "teachllm-quiz-letter", text: LETTERS[i] + ") "}),
                                    o.cloneNode(true)]);
        })));
      }
      paper.appendChild(item);
    });
    var key = questions.map(function (q, k) {
      return "<b>" + (k + 1) + ".</b>\u00a0" + (q.type === "numeric" ? q.answer_text : LETTERS[q.answer]);
    });
    paper.appendChild(element("p", {"class": "teachllm-quiz-print-key",
                                    html: "<strong>" + (ANSWERS[root.teachllm.lang] || ANSWERS.en) + ":</strong> " +
                                          key.join(" \u00b7 ")}));
    return paper;
  }

  function onlyMakesTheWidget(code) {  // the cell's code is imports and one call, such as viz.Quiz(6)
    var statements = code.split("\n").map(function (line) { return line.trim(); }).filter(function (line) {
      return line && line[0] !== "#" && !/^(from\s+\S+\s+)?import\s/.test(line);
    });
    return statements.length === 1 && /^[\w.]+\(.*\)$/.test(statements[0]);
  }

  window.addEventListener("beforeprint", function () {
    document.querySelectorAll(".teachllm-quiz-print").forEach(function (e) { e.remove(); });
    document.querySelectorAll("div.teachllm-live").forEach(function (root) {
      var cell = root.closest(".cell"), code = cell && cell.querySelector(".cell_input pre");
      if (code && onlyMakesTheWidget(code.textContent)) { cell.classList.add("teachllm-print-no-code"); }
      if (root.dataset.teachllmWidget === "Quiz" && root.teachllm) {
        root.insertAdjacentElement("afterend", quizOnPaper(root));
      }
    });
  });
  window.addEventListener("afterprint", function () {
    document.querySelectorAll(".teachllm-quiz-print").forEach(function (e) { e.remove(); });
    document.querySelectorAll(".teachllm-print-no-code").forEach(function (e) {
      e.classList.remove("teachllm-print-no-code");
    });
  });

  // ---- start ----------------------------------------------------------------------------------------
  var kinds = {DistributionExplorer: distributionWidget, Quiz: quizWidget};
  window.teachllm = {
    sampling: {softmax: softmax, repetition: repetition, presenceFrequency: presenceFrequency, temperature: temperature,
               topK: topK, topP: topP, minP: minP, distribution: distribution, sample: sample},
    unpack: unpack, format: format, ready: null
  };
  function start() {  // the page's timing marks say how long the widgets took: teachllm-widgets (performance API)
    performance.mark("teachllm-widgets-start");
    var drawn = [];
    document.querySelectorAll("div.teachllm-live").forEach(function (root) {
      var spec = document.getElementById(root.id + "-json");
      if (!spec || typeof Plotly === "undefined") { return; }
      var form = JSON.parse(spec.textContent);
      root.textContent = "";
      drawn.push((kinds[form.widget] || framesWidget)(root, form));
    });
    return Promise.all(drawn).then(function () {
      performance.measure("teachllm-widgets", "teachllm-widgets-start");
      document.documentElement.dataset.teachllmWidgets = "ready";
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { window.teachllm.ready = start(); });
  } else {
    window.teachllm.ready = start();
  }
})();
