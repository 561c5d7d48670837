// rocketpipe console: live line charts on <canvas class="chart" data-source=… data-mode=…>.
// data-mode="offsets": the source answers {time_ms, max_offset_sum}; the chart shows the
//   messages per second between successive reads.
// data-mode="cluster": the source answers {time_ms, brokers: [{broker, put_tps, get_tps}]};
//   the chart shows put and get TPS summed over the brokers.
// data-mode="series": the source answers {time_ms, series: {name: value}}; one line per name.
// The newest value is also written to the canvas's data-last attribute.
"use strict";
(function () {
  const POINTS = 90, PERIOD_MS = 2000;
  const COLORS = ["#1f77b4", "#e6550d", "#31a354", "#756bb1"];

  function draw(canvas, series) {
    const ctx = canvas.getContext("2d"), w = canvas.width, h = canvas.height, pad = 34;
    ctx.clearRect(0, 0, w, h);
    let max = 1;
    for (const s of series) for (const v of s.values) max = Math.max(max, v);
    ctx.strokeStyle = "#ccc"; ctx.fillStyle = "#666"; ctx.font = "11px sans-serif";
    for (let i = 0; i <= 4; i++) {
      const y = h - pad + (i * (2 * pad - h)) / 4 + 0.5;
      ctx.beginPath(); ctx.moveTo(pad, y); ctx.lineTo(w - 8, y); ctx.stroke();
      ctx.fillText((max * i / 4).toFixed(max < 10 ? 1 : 0), 2, y + 3);
    }
    series.forEach((s, k) => {
      ctx.strokeStyle = COLORS[k % COLORS.length]; ctx.lineWidth = 2; ctx.beginPath();
      s.values.forEach((v, i) => {
        const x = pad + (i * (w - pad - 8)) / (POINTS - 1);
        const y = h - pad - (v / max) * (h - 2 * pad);
        if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
      });
      ctx.stroke();
      ctx.fillStyle = ctx.strokeStyle;
      if (s.values.length) {  // a dot on the newest point (a single read draws no line)
        const i = s.values.length - 1, v = s.values[i];
        const x = pad + (i * (w - pad - 8)) / (POINTS - 1), y = h - pad - (v / max) * (h - 2 * pad);
        ctx.beginPath(); ctx.arc(x, y, 3, 0, 2 * Math.PI); ctx.fill();
      }
      const last = s.values.length ? s.values[s.values.length - 1] : 0;
      ctx.fillText(s.name + ": " + last.toFixed(1) + " msg/s", pad + 8 + k * 170, h - 10);
    });
  }

  function start(canvas) {
    const mode = canvas.dataset.mode, src = canvas.dataset.source;
    const series = mode === "cluster"
      ? [{ name: "put", values: [] }, { name: "get", values: [] }]
      : mode === "series" ? [] : [{ name: "messages", values: [] }];
    let prev = null;
    function push(k, v) {
      const vals = series[k].values; vals.push(v);
      if (vals.length > POINTS) vals.shift();
    }
    async function tick() {
      try {
        const r = await fetch(src, { cache: "no-store" });
        if (r.ok) {
          const d = await r.json();
          if (mode === "series") {
            const names = Object.keys(d.series || {});
            names.forEach((name, k) => {
              if (!series.some((s) => s.name === name)) series.push({ name: name, values: [] });
            });
            series.forEach((s, k) => push(k, Number((d.series || {})[s.name] || 0)));
            canvas.dataset.last = series.map((s) => s.name + "=" + s.values[s.values.length - 1]).join(" ");
          } else if (mode === "cluster") {
            let put = 0, get = 0;
            for (const b of d.brokers) { put += b.put_tps; get += b.get_tps; }
            push(0, put); push(1, get);
            canvas.dataset.last = put.toFixed(1) + " " + get.toFixed(1);
          } else {
            if (prev) {
              const dt = (d.time_ms - prev.time_ms) / 1000;
              const rate = dt > 0 ? Math.max(0, d.max_offset_sum - prev.max_offset_sum) / dt : 0;
              push(0, rate);
              canvas.dataset.last = rate.toFixed(1);
            }
            prev = d;
            canvas.dataset.total = String(d.max_offset_sum);
          }
          draw(canvas, series);
        }
      } catch (e) { /* the next tick tries again */ }
      setTimeout(tick, PERIOD_MS);
    }
    draw(canvas, series);
    tick();
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll("canvas.chart[data-source]").forEach(start);
  });
})();
