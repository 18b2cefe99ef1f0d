"use strict";
// The last minute of a sale on a canvas: stock left as a line (left axis, 0 to the
// sale's stock) and orders accepted per second as bars (scaled to the minute's highest).
var SK = window.SK || (window.SK = {});

SK.chart = (function () {
  var WINDOW_MS = 60000;

  function draw(canvas, samples, stock) {
    var ctx = canvas.getContext("2d");
    var w = canvas.width, h = canvas.height, pad = 4;
    ctx.clearRect(0, 0, w, h);
    if (!samples.length) return;
    var end = samples[samples.length - 1].t, start = end - WINDOW_MS;
    var x = function (t) { return pad + (w - 2 * pad) * (t - start) / WINDOW_MS; };
    var top = Math.max(1, stock || 0);
    var peak = 1;
    samples.forEach(function (s) { peak = Math.max(peak, s.accepted || 0); });

    ctx.fillStyle = "rgba(208, 122, 0, 0.55)";
    samples.forEach(function (s) {
      var bh = (h - 2 * pad) * (s.accepted || 0) / peak;
      ctx.fillRect(x(s.t) - 3, h - pad - bh, 6, bh);
    });

    ctx.strokeStyle = "#1f5fbf";
    ctx.lineWidth = 2;
    ctx.beginPath();
    samples.forEach(function (s, i) {
      var y = h - pad - (h - 2 * pad) * Math.min(s.left || 0, top) / top;
      if (i === 0) ctx.moveTo(x(s.t), y); else ctx.lineTo(x(s.t), y);
    });
    ctx.stroke();

    ctx.fillStyle = "#5b6475";
    ctx.font = "11px sans-serif";
    ctx.fillText("stock " + top, pad + 2, pad + 10);
    ctx.fillText("peak " + peak + "/s", w - 80, pad + 10);
  }

  return { draw: draw, WINDOW_MS: WINDOW_MS };
})();
