// The trace viewer's page script. Every element is built with textContent, never innerHTML,
// so value reprs such as "<lambda>" are shown as text. State lives in the URL hash
// (#frame=F&step=S) so that every step has a link.
(function () {
  "use strict";

  var data = JSON.parse(document.getElementById("trace-data").textContent);
  var frames = data.frames;
  // Steps name their graph's nodes by number in the shared table (see page_data).
  frames.forEach(function (frame) {
    frame.steps.forEach(function (step) {
      step.graph = step.graph.map(function (index) { return data.nodes[index]; });
    });
  });
  var state = { frame: 0, step: 0 };
  var view = { frame: -1, sourceRows: {}, bytecodeRows: {}, currentSource: null, currentBytecode: null };

  function $(id) { return document.getElementById(id); }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  function clamp(value, low, high) { return Math.max(low, Math.min(high, value)); }

  function hashFor(frame, step) { return "#frame=" + frame + "&step=" + step; }

  function readHash() {
    var params = new URLSearchParams(location.hash.replace(/^#/, ""));
    var frame = parseInt(params.get("frame"), 10);
    var step = parseInt(params.get("step"), 10);
    return { frame: isNaN(frame) ? 0 : frame, step: isNaN(step) ? 0 : step };
  }

  // How many leading entries two lists share: entries after that were pushed or replaced.
  function commonPrefix(before, after) {
    var count = 0;
    while (count < before.length && count < after.length && before[count] === after[count]) count++;
    return count;
  }

  function reveal(row, container) {
    if (!row) return;
    var rowBox = row.getBoundingClientRect();
    var box = container.getBoundingClientRect();
    if (rowBox.top < box.top || rowBox.bottom > box.bottom) {
      container.scrollTop += rowBox.top - box.top - box.height / 3;
    }
  }

  function frameLabel(index) {
    var frame = frames[index];
    var label = index + " \u00b7 " + frame.name + " \u2014 " + frame.kind;
    if (frame.parent !== null && frame.parent !== undefined) label += " (called from frame " + frame.parent + ")";
    return label;
  }

  function emptyRow(table, text, columns) {
    var row = el("tr");
    var cell = el("td", "empty", text);
    cell.colSpan = columns;
    row.appendChild(cell);
    table.appendChild(row);
  }

  // ---- building a frame's static panels ---------------------------------------------

  function buildFrame(index) {
    var frame = frames[index];
    view.frame = index;
    view.currentSource = view.currentBytecode = null;
    $("frame-select").value = String(index);
    $("slider").max = String(Math.max(frame.steps.length - 1, 0));
    buildSource(frame);
    buildBytecode(frame);
  }

  function buildSource(frame) {
    var source = $("source");
    clear(source);
    view.sourceRows = {};
    $("source-where").textContent = frame.filename ? frame.filename.split("/").pop() : "";
    if (!frame.source_runs.length) {
      source.appendChild(el("div", "src-line", "  (source not available)"));
      return;
    }
    frame.source_runs.forEach(function (runs, offset) {
      var number = frame.first_line + offset;
      var line = el("div", "src-line");
      line.appendChild(el("span", "num", number));
      var text = el("span", "text");
      runs.forEach(function (run) { text.appendChild(el("span", run[0], run[1])); });
      line.appendChild(text);
      source.appendChild(line);
      view.sourceRows[number] = line;
    });
  }

  function buildBytecode(frame) {
    var table = $("bytecode");
    clear(table);
    view.bytecodeRows = {};
    var visited = {};
    frame.steps.forEach(function (step) { visited[step.offset] = true; });
    var previousLine = null;
    frame.bytecode.forEach(function (entry, position) {
      var offset = entry[0], opname = entry[1], argrepr = entry[2], line = entry[3], isTarget = entry[4];
      var row = el("tr", visited[offset] ? "visited" : "unvisited");
      row.dataset.offset = offset;
      row.appendChild(el("td", "num", position === 0 || line !== previousLine ? (line === null ? "" : line) : ""));
      row.appendChild(el("td", "target", isTarget ? ">>" : ""));
      row.appendChild(el("td", "num", offset));
      row.appendChild(el("td", "op", opname));
      row.appendChild(el("td", "arg", argrepr));
      row.addEventListener("click", function () { goToOffset(offset); });
      previousLine = line;
      table.appendChild(row);
      view.bytecodeRows[offset] = row;
    });
    if (!frame.bytecode.length) emptyRow(table, "(no bytecode)", 5);
  }

  // The next step at this offset after the current one, else the first.
  function goToOffset(offset) {
    var steps = frames[state.frame].steps;
    var first = -1;
    for (var index = 0; index < steps.length; index++) {
      if (steps[index].offset !== offset) continue;
      if (first < 0) first = index;
      if (index > state.step) { go(state.frame, index); return; }
    }
    if (first >= 0) go(state.frame, first);
  }

  // ---- per-step panels --------------------------------------------------------------

  function renderControls(frame) {
    var last = Math.max(frame.steps.length - 1, 0);
    $("slider").value = String(state.step);
    $("first").disabled = $("prev").disabled = state.step <= 0;
    $("next").disabled = $("last").disabled = state.step >= last;
    $("counter").textContent = frame.steps.length ? "step " + state.step + " / " + last : "no steps";
    $("permalink").href = hashFor(state.frame, state.step);
  }

  function renderNote(frame, step) {
    $("offset").textContent = step ? step.offset : "";
    $("opname").textContent = step ? step.opname : "";
    $("argrepr").textContent = step ? step.argrepr : "";
    var note = $("note");
    note.textContent = step ? (step.note || "(no note for this step)") : "No steps were recorded for this frame.";
    note.className = step && step.note ? "note" : "note empty";
    var links = $("links");
    clear(links);
    if (frame.parent !== null && frame.parent !== undefined) {
      var back = frame.parent_step === null ? 0 : frame.parent_step;
      links.appendChild(stepLink("\u2191 back to the caller, " + frames[frame.parent].name + " (frame " + frame.parent +
                                 ", step " + back + ")", frame.parent, back));
    }
    frames.forEach(function (other, index) {
      if (other.parent !== state.frame || other.parent_step !== state.step) return;
      links.appendChild(stepLink("\u2193 step into " + other.name + " (frame " + index + ", " + other.steps.length +
                                 " steps)", index, 0));
    });
  }

  // A link to a step. A plain click shows the step at once: left to the address change
  // alone, the page would show the new address with the old step until the (later)
  // hashchange event. Clicks that open a new tab or window keep the link's default.
  function stepLink(text, frame, step) {
    var link = el("a", null, text);
    link.href = hashFor(frame, step);
    link.addEventListener("click", function (event) {
      if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
      event.preventDefault();
      go(frame, step);
    });
    return link;
  }

  function renderSource(step) {
    if (view.currentSource) view.currentSource.classList.remove("current");
    view.currentSource = step && step.line !== null ? view.sourceRows[step.line] || null : null;
    if (view.currentSource) {
      view.currentSource.classList.add("current");
      reveal(view.currentSource, $("source"));
    }
  }

  function renderBytecode(step) {
    if (view.currentBytecode) view.currentBytecode.classList.remove("current");
    view.currentBytecode = step ? view.bytecodeRows[step.offset] || null : null;
    if (view.currentBytecode) {
      view.currentBytecode.classList.add("current");
      reveal(view.currentBytecode, $("bytecode").parentNode);
    }
  }

  function renderStack(step, previous) {
    var table = $("stack");
    clear(table);
    var stack = step ? step.stack : [];
    if (!stack.length) { emptyRow(table, "(empty)", 3); return; }
    var kept = commonPrefix(previous ? previous.stack : [], stack);
    for (var index = stack.length - 1; index >= 0; index--) {
      var pushed = index >= kept;
      var row = el("tr", pushed ? "new" : "");
      row.appendChild(el("td", "num", index));
      row.appendChild(el("td", "value", stack[index]));
      row.appendChild(el("td", "tag", pushed ? "new" : ""));
      table.appendChild(row);
    }
  }

  function renderLocals(step, previous) {
    var table = $("locals");
    clear(table);
    var names = step ? Object.keys(step.locals) : [];
    if (!names.length) { emptyRow(table, "(none)", 3); return; }
    names.forEach(function (name) {
      var value = step.locals[name];
      var changed = previous !== null && previous.locals[name] !== value;
      var row = el("tr", changed ? "changed" : "");
      row.appendChild(el("td", "name", name));
      row.appendChild(el("td", "value", value));
      row.appendChild(el("td", "tag", changed ? "set" : ""));
      table.appendChild(row);
    });
  }

  function renderGraph(step, previous) {
    var table = $("graph");
    clear(table);
    var graph = step ? step.graph : [];
    $("graph-count").textContent = graph.length === 1 ? "1 node" : graph.length + " nodes";
    if (!graph.length) { emptyRow(table, "(no nodes)", 6); return; }
    var kept = previous ? commonPrefix(previous.graph, graph) : graph.length;
    var firstNew = null;
    graph.forEach(function (node, index) {
      var added = index >= kept;
      var row = el("tr", added ? "new" : "");
      row.appendChild(el("td", "num", index));
      var columns = node.trim().split(/\s{2,}/);
      if (columns.length === 5) {
        ["opcode", "name", "target", "args", "kwargs"].forEach(function (name, column) {
          row.appendChild(el("td", name, columns[column]));
        });
      } else {
        var cell = el("td", "whole", node);
        cell.colSpan = 5;
        row.appendChild(cell);
      }
      table.appendChild(row);
      if (added && !firstNew) firstNew = row;
    });
    reveal(firstNew, table.parentNode);
  }

  function render() {
    if (view.frame !== state.frame) buildFrame(state.frame);
    var frame = frames[state.frame];
    var step = frame.steps[state.step];
    var previous = state.step > 0 ? frame.steps[state.step - 1] : null;
    renderControls(frame);
    renderNote(frame, step);
    renderSource(step);
    renderBytecode(step);
    renderStack(step, previous);
    renderLocals(step, previous);
    renderGraph(step, previous);
  }

  function go(frame, step) {
    if (!frames.length) return;
    state.frame = clamp(frame, 0, frames.length - 1);
    state.step = clamp(step, 0, Math.max(frames[state.frame].steps.length - 1, 0));
    render();
    var hash = hashFor(state.frame, state.step);
    if (location.hash === hash) return;
    try {
      history.replaceState(null, "", hash);
    } catch (error) {
      location.replace(hash); // some file:// pages refuse replaceState; this adds no history either
    }
  }

  // ---- summary and wiring -----------------------------------------------------------

  function renderSummary() {
    var graphs = $("graphs");
    $("graphs-count").textContent = "(" + data.graphs.length + ")";
    if (!data.graphs.length) graphs.appendChild(el("p", "muted", "No graph was compiled."));
    data.graphs.forEach(function (text, index) {
      graphs.appendChild(el("h3", null, "Graph " + index));
      graphs.appendChild(el("pre", "code", text));
    });
    $("guards-count").textContent = "(" + data.guards.length + ")";
    $("guards").textContent = data.guards.length ? data.guards.join("\n") : "(no guards)";
    $("result").textContent = data.result;
  }

  function wire() {
    var select = $("frame-select");
    frames.forEach(function (frame, index) {
      var option = el("option", null, frameLabel(index));
      option.value = String(index);
      select.appendChild(option);
    });
    select.addEventListener("change", function () { go(parseInt(select.value, 10), 0); });
    $("first").addEventListener("click", function () { go(state.frame, 0); });
    $("prev").addEventListener("click", function () { go(state.frame, state.step - 1); });
    $("next").addEventListener("click", function () { go(state.frame, state.step + 1); });
    $("last").addEventListener("click", function () { go(state.frame, frames[state.frame].steps.length - 1); });
    $("slider").addEventListener("input", function () { go(state.frame, parseInt($("slider").value, 10)); });
    window.addEventListener("hashchange", function () {
      var wanted = readHash();
      if (wanted.frame !== state.frame || wanted.step !== state.step) go(wanted.frame, wanted.step);
    });
    document.addEventListener("keydown", onKey);
  }

  function onKey(event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    var target = event.target || {};
    var tag = target.tagName;
    if (tag === "SELECT" || tag === "TEXTAREA") return;
    // A focused slider moves itself on arrow keys and reports it through "input".
    if (tag === "INPUT") return;
    var moves = {
      ArrowRight: function () { go(state.frame, state.step + 1); },
      ArrowLeft: function () { go(state.frame, state.step - 1); },
      Home: function () { go(state.frame, 0); },
      End: function () { go(state.frame, frames[state.frame].steps.length - 1); },
      "]": function () { go(state.frame + 1, 0); },
      "[": function () { go(state.frame - 1, 0); },
    };
    if (!moves.hasOwnProperty(event.key)) return;
    event.preventDefault();
    moves[event.key]();
  }

  $("title").textContent = data.title;
  renderSummary();
  if (!frames.length) {
    $("note").textContent = "No frames were recorded.";
    ["first", "prev", "next", "last", "slider", "frame-select"].forEach(function (id) { $(id).disabled = true; });
    return;
  }
  wire();
  var start = readHash();
  go(start.frame, start.step);
})();
