#include "orchestrator/html.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace ws {
namespace {

using json = nlohmann::json;

// Any JSON value as display text (unescaped: callers escape).
std::string Text(const json& j) {
  if (j.is_null())
    return "-";
  if (j.is_string())
    return j.get<std::string>();
  if (j.is_boolean())
    return j.get<bool>() ? "yes" : "no";
  if (j.is_number_integer())
    return std::to_string(j.get<int64_t>());
  if (j.is_number())
    return fmt::format("{:.4g}", j.get<double>());
  return j.dump();
}

std::string E(const json& j) {
  return HtmlEscape(Text(j));
}

std::string Num(const json& j, const char* f = "{:.2f}") {
  if (!j.is_number())
    return "-";
  const double v = j.get<double>();
  if (v == 0)
    return "-";
  return fmt::format(fmt::runtime(f), v);
}

std::string Get(const json& j, const char* key) {
  return j.is_object() && j.contains(key) ? Text(j[key]) : "-";
}

const json& At(const json& j, const char* key) {
  static const json kNull;
  return j.is_object() && j.contains(key) ? j[key] : kNull;
}

// " (median of N, S% apart)" after a leaderboard time that N evaluations make: S is the spread
// of their times over the median; nothing for one.
std::string MedianOf(const json& row) {
  const json n = At(row, "evaluations");
  if (!n.is_number_integer() || n.get<int64_t>() < 2)
    return "";
  const json lo = At(row, "fastest_us"), hi = At(row, "slowest_us"), mid = At(row, "time_us");
  std::string apart;
  if (lo.is_number() && hi.is_number() && mid.is_number() && mid.get<double>() > 0) {
    apart = fmt::format(", {:.1f}% apart",
                        100 * (hi.get<double>() - lo.get<double>()) / mid.get<double>());
  }
  return fmt::format(" <small>(median of {}{})</small>", n.get<int64_t>(), apart);
}

std::string KernelLink(const json& id) {
  if (!id.is_number_integer())
    return "-";
  return fmt::format("<a href=\"/kernels/{0}\">kernel {0}</a>", id.get<int64_t>());
}

std::string CampaignLink(const json& id) {
  if (!id.is_number_integer())
    return "-";
  return fmt::format("<a href=\"/campaigns/{0}\">campaign {0}</a>", id.get<int64_t>());
}

std::string ProblemLink(const std::string& name) {
  return fmt::format("<a href=\"/problems/{}\">{}</a>", HtmlEscape(UrlSegment(name)),
                     HtmlEscape(name));
}

std::string Flags(const json& suspicion) {
  if (!suspicion.is_array() || suspicion.empty())
    return "";
  std::string out;
  for (const auto& f : suspicion) {
    out += fmt::format("<span class=\"flag\" title=\"{}\">{}</span> ", E(At(f, "detail")),
                       E(At(f, "flag")));
  }
  return out;
}

std::string Page(const std::string& title, const std::string& body, const PageOptions& o) {
  std::string refresh =
      o.refresh_s > 0 ? fmt::format("<meta http-equiv=\"refresh\" content=\"{}\">", o.refresh_s)
                      : "";
  return fmt::format(
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width\">{}"
      "<title>{} · warpsmith</title><link rel=\"stylesheet\" href=\"/static/style.css\"></head>"
      "<body><nav><a href=\"/\">leaderboard</a> · <a href=\"/campaigns\">campaigns</a> · "
      "<a href=\"/api/leaderboard\">api</a></nav><main>\n{}\n</main></body></html>\n",
      refresh, HtmlEscape(title), body);
}

std::string DiffHtml(const json& diff) {
  if (!diff.is_string())
    return "<p class=\"muted\">none</p>";
  const std::string d = diff.get<std::string>();
  if (d.empty())
    return "<p class=\"muted\">identical</p>";
  std::string out = "<pre class=\"diff\">";
  size_t start = 0;
  while (start < d.size()) {
    size_t nl = d.find('\n', start);
    if (nl == std::string::npos)
      nl = d.size();
    std::string_view line(d.data() + start, nl - start);
    const char* cls = "";
    if (line.rfind("@@", 0) == 0)
      cls = "hunk";
    else if (line.rfind("+++", 0) == 0 || line.rfind("---", 0) == 0)
      cls = "head";
    else if (!line.empty() && line[0] == '+')
      cls = "add";
    else if (!line.empty() && line[0] == '-')
      cls = "del";
    out += fmt::format("<span class=\"{}\">{}</span>\n", cls, HtmlEscape(line));
    start = nl + 1;
  }
  return out + "</pre>";
}

std::string ParamsText(const json& params) {
  if (!params.is_object() || params.empty())
    return "";
  std::string out;
  for (const auto& [k, v] : params.items()) out += (out.empty() ? "" : ", ") + k + "=" + Text(v);
  return out;
}

}  // namespace

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string UrlSegment(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::string BestTimeSvg(const json& series, const std::string& x_key, const std::string& x_label) {
  // The legend sits under the x axis, one row per series, clear of the data.
  const double rows = static_cast<double>(series.is_array() ? series.size() : 0);
  const double W = 640, L = 70, R = 20, T = 20, B = 50 + 16 * rows, H = 300 + 16 * rows;
  double xmax = 0, ymin = 0, ymax = 0;
  auto widen = [&](double y) {
    if (y <= 0)
      return;
    ymin = ymin == 0 ? y : std::min(ymin, y);
    ymax = std::max(ymax, y);
  };
  for (const auto& s : series) {
    for (const auto& p : At(s, "points")) {
      xmax = std::max(xmax, At(p, x_key.c_str()).is_number() ? p[x_key].get<double>() : 0.0);
      if (At(p, "best_time_us").is_number())
        widen(p["best_time_us"].get<double>());
      if (At(p, "time_us").is_number())
        widen(p["time_us"].get<double>());
    }
    if (At(s, "baseline_time_us").is_number())
      widen(s["baseline_time_us"].get<double>());
    if (At(s, "sol_us").is_number())
      widen(s["sol_us"].get<double>());
  }
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" role=\"img\"><rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#fff\"/>",
      W, H);
  out += fmt::format(
      "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#333\"/>"
      "<line x1=\"{0}\" y1=\"{3}\" x2=\"{0}\" y2=\"{1}\" stroke=\"#333\"/>",
      L, H - B, W - R, T);
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{}</text>",
                     (L + W - R) / 2, H - B + 32, HtmlEscape(x_label));
  out += fmt::format(
      "<text x=\"14\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 14 {})\">time (us, log): best so far, and each</text>",
      (T + H - B) / 2, (T + H - B) / 2);
  if (ymax <= 0 || xmax <= 0) {
    out += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"13\" text-anchor=\"middle\">no timed "
        "evaluations yet</text></svg>",
        W / 2, H / 2);
    return out;
  }
  const double ly0 = std::log(ymin * 0.9), ly1 = std::log(ymax * 1.1);
  auto X = [&](double x) { return L + (W - L - R) * x / xmax; };
  auto Y = [&](double y) { return (H - B) - (H - B - T) * (std::log(y) - ly0) / (ly1 - ly0); };
  // Ticks: the axis ends. Times of 100 us and more read better without an exponent.
  auto tick = [](double v) { return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v); };
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>",
                     L - 4, Y(ymin) + 4, tick(ymin));
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>",
                     L - 4, Y(ymax) + 4, tick(ymax));
  // Ticks between the ends at 1-2-5 steps, where they do not crowd the ends.
  for (double decade = std::pow(10.0, std::floor(std::log10(ymin))); decade <= ymax; decade *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      const double y = decade * m;
      if (y <= ymin * 1.25 || y >= ymax / 1.25) continue;
      out += fmt::format(
          "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#eee\"/>"
          "<text x=\"{3}\" y=\"{4:.1f}\" font-size=\"11\" text-anchor=\"end\">{5}</text>",
          L, Y(y), W - R, L - 4, Y(y) + 4, tick(y));
    }
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\">0</text>", L, H - B + 14);
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{:.4g}</text>",
                     W - R, H - B + 14, xmax);
  const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
  int i = 0;
  for (const auto& s : series) {
    const char* c = colors[i % 6];
    std::string pts;
    double last_y = 0;
    // Every ranked evaluation as a dot; the best so far as a step line over them.
    for (const auto& p : At(s, "points")) {
      if (At(p, "time_us").is_number() && At(p, x_key.c_str()).is_number()) {
        out += fmt::format(
            "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\" fill-opacity=\"0.45\"/>",
            X(p[x_key].get<double>()), Y(p["time_us"].get<double>()), c);
      }
    }
    for (const auto& p : At(s, "points")) {
      if (!At(p, "best_time_us").is_number() || !At(p, x_key.c_str()).is_number())
        continue;
      const double x = X(p[x_key].get<double>()), y = Y(p["best_time_us"].get<double>());
      if (!pts.empty())
        pts += fmt::format(" {:.1f},{:.1f}", x, last_y);  // a step
      pts += fmt::format(" {:.1f},{:.1f}", x, y);
      last_y = y;
    }
    if (!pts.empty()) {
      pts += fmt::format(" {:.1f},{:.1f}", X(xmax), last_y);
      out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>",
                         c, pts);
    }
    auto hline = [&](const char* key, const char* dash, const char* label) {
      if (!At(s, key).is_number())
        return;
      const double y = Y(s[key].get<double>());
      out += fmt::format(
          "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"{}\" "
          "stroke-dasharray=\"{}\"/><text x=\"{}\" y=\"{:.1f}\" font-size=\"11\" "
          "text-anchor=\"end\" fill=\"{}\">{}</text>",
          L, y, W - R, y, c, dash, W - R, y - 3, c, label);
    };
    hline("baseline_time_us", "6 3", "baseline");
    hline("sol_us", "2 3", "speed of light");
    out +=
        fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"{}\">&#9632; {} {}</text>",
                    L, H - B + 52 + 16 * i, c, E(At(s, "gpu")),
                    HtmlEscape(ParamsText(At(s, "params"))));
    ++i;
  }
  return out + "</svg>";
}

std::string LeaderboardPage(const json& rows, const json& campaigns, const PageOptions& o) {
  std::string b = "<h1>Leaderboard</h1>\n";
  if (!rows.is_array() || rows.empty()) {
    b += "<p>No verified, timed kernels yet.</p>\n";
  } else {
    b += "<table><thead><tr><th>problem</th><th>params</th><th>GPU</th><th>time (us)</th>"
         "<th>of speed-of-light</th><th>speed-up over baseline</th><th>kernel</th><th>agent</th>"
         "<th>campaign</th><th>flags</th></tr></thead><tbody>\n";
    for (const auto& r : rows) {
      std::string speedup =
          At(r, "speedup").is_number()
              ? fmt::format("{:.2f}x (baseline {:.2f} us)", r["speedup"].get<double>(),
                            At(At(r, "baseline"), "time_us").get<double>())
              : "no baseline evaluation";
      b += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
          "<td>{}</td><td>{} <code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
          ProblemLink(Get(r, "problem")), HtmlEscape(ParamsText(At(r, "params"))), E(At(r, "gpu")),
          Num(At(r, "time_us")) + MedianOf(r),
          Num(At(r, "sol_fraction"), "{:.3f}"), HtmlEscape(speedup),
          KernelLink(At(r, "kernel_id")), HtmlEscape(Get(r, "kernel_hash").substr(0, 12)),
          E(At(r, "agent")), CampaignLink(At(r, "campaign_id")), Flags(At(r, "suspicion")));
    }
    b += "</tbody></table>\n";
  }
  if (campaigns.is_array() && !campaigns.empty()) {
    b += "<h2>Campaigns</h2><ul>\n";
    for (const auto& c : campaigns) {
      b += fmt::format("<li>{} — {} (updated {})</li>\n", CampaignLink(At(c, "id")),
                       E(At(c, "status")), E(At(c, "updated_at")));
    }
    b += "</ul>\n";
  }
  return Page("leaderboard", b, o);
}

std::string ProblemPage(const json& p, const PageOptions& o) {
  std::string b = fmt::format("<h1>Problem {}</h1>\n", E(At(p, "problem")));
  b += "<h2>Best time against evaluations</h2>\n" +
       BestTimeSvg(At(p, "series"), "evaluations", "evaluations") + "\n";
  b += "<h2>Best time against spend</h2>\n" +
       BestTimeSvg(At(p, "series"), "gpu_seconds", "spend (GPU-seconds)") + "\n";
  b += "<h2>Leaderboard</h2><table><thead><tr><th>params</th><th>GPU</th><th>time (us)</th>"
       "<th>of SOL</th><th>speed-up</th><th>kernel</th><th>agent</th><th>flags</th></tr></thead>"
       "<tbody>\n";
  for (const auto& r : At(p, "leaderboard")) {
    b += fmt::format(
        "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        HtmlEscape(ParamsText(At(r, "params"))), E(At(r, "gpu")),
        Num(At(r, "time_us")) + MedianOf(r),
        Num(At(r, "sol_fraction"), "{:.3f}"), Num(At(r, "speedup"), "{:.2f}x"),
        KernelLink(At(r, "kernel_id")), E(At(r, "agent")), Flags(At(r, "suspicion")));
  }
  b += "</tbody></table>\n<h2>Every candidate</h2><table><thead><tr><th>evaluation</th>"
       "<th>kernel</th><th>verdict</th><th>time (us)</th><th>of SOL</th><th>GPU</th>"
       "<th>params</th><th>knobs</th><th>agent</th><th>campaign</th><th>GPU s</th><th>flags</th>"
       "<th>message</th></tr></thead><tbody>\n";
  for (const auto& c : At(p, "candidates")) {
    std::string msg = Get(c, "message");
    if (msg.size() > 200)
      msg = msg.substr(0, 200) + "…";
    b += fmt::format(
        "<tr class=\"v-{}\"><td>{}</td><td>{}{}</td><td>{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>\n",
        At(c, "verdict") == "ok" ? "ok" : "bad", E(At(c, "evaluation_id")),
        KernelLink(At(c, "kernel_id")), At(c, "baseline") == true ? " (baseline)" : "",
        E(At(c, "verdict")), Num(At(c, "time_us")), Num(At(c, "sol_fraction"), "{:.3f}"),
        E(At(c, "gpu")), HtmlEscape(ParamsText(At(c, "params"))),
        HtmlEscape(ParamsText(At(c, "knobs"))), E(At(c, "agent")),
        CampaignLink(At(c, "campaign_id")), Num(At(c, "gpu_seconds"), "{:.1f}"),
        Flags(At(c, "suspicion")), HtmlEscape(msg));
  }
  b += "</tbody></table>\n";
  return Page("problem " + Get(p, "problem"), b, o);
}

std::string KernelPage(const json& k, const PageOptions& o) {
  std::string b = fmt::format("<h1>Kernel {} <small>({})</small></h1>\n", E(At(k, "kernel_id")),
                              ProblemLink(Get(k, "problem")));
  b += "<h2>Provenance</h2><dl>";
  b += fmt::format(
      "<dt>problem</dt><dd>{}</dd><dt>hash</dt><dd><code>{}</code></dd>"
      "<dt>origin</dt><dd>{}</dd><dt>agent</dt><dd>{}</dd><dt>campaign</dt><dd>{}</dd>"
      "<dt>parent</dt><dd>{}</dd><dt>created</dt><dd>{}</dd></dl>\n",
      ProblemLink(Get(k, "problem")), E(At(k, "hash")), E(At(k, "origin")), E(At(k, "agent")),
      CampaignLink(At(k, "campaign_id")), KernelLink(At(k, "parent_id")), E(At(k, "created_at")));
  b += "<h2>Suspicion flags</h2>";
  const json& sus = At(k, "suspicion");
  if (!sus.is_array() || sus.empty()) {
    b += "<p class=\"muted\">none</p>\n";
  } else {
    b += "<ul>";
    for (const auto& f : sus) {
      b += fmt::format("<li><span class=\"flag\">{}</span> {} (evaluation {})</li>",
                       E(At(f, "flag")), E(At(f, "detail")), E(At(f, "evaluation_id")));
    }
    b += "</ul>\n";
  }
  const json& checks = At(k, "checks");
  b += "<h2>Checks</h2><dl>";
  b += fmt::format("<dt>verified (an ok verdict)</dt><dd>{}</dd><dt>compiled</dt><dd>{}</dd>",
                   E(At(checks, "verified")), E(At(checks, "compiled")));
  std::string verdicts;
  for (const auto& [v, n] : At(checks, "verdicts").items())
    verdicts += (verdicts.empty() ? "" : ", ") + v + " " + Text(n);
  b += fmt::format("<dt>verdicts</dt><dd>{}</dd>", HtmlEscape(verdicts));
  for (const auto& [layer, state] : At(checks, "sandbox").items()) {
    b += fmt::format("<dt>sandbox {}</dt><dd>{}</dd>", HtmlEscape(layer), E(state));
  }
  for (const auto& [tool, state] : At(checks, "deep").items()) {
    b += fmt::format("<dt>deep {}</dt><dd>{}</dd>", HtmlEscape(tool), E(state));
  }
  b += "</dl>\n<h2>Plan</h2>";
  const json& plan = At(k, "plan");
  b += At(plan, "text").is_string() && !plan["text"].get<std::string>().empty()
           ? "<pre>" + E(plan["text"]) + "</pre>\n"
           : "<p class=\"muted\">no plan comment</p>\n";
  b += "<h2>Resources</h2>";
  b += At(k, "resources").is_null() ? "<p class=\"muted\">none recorded</p>\n"
                                    : "<pre>" + HtmlEscape(k["resources"].dump(2)) + "</pre>\n";
  b += "<h2>Timing distribution</h2><table><thead><tr><th>evaluation</th><th>GPU</th>"
       "<th>shape</th><th>kind</th><th>median us</th><th>p90 us</th><th>min us</th>"
       "<th>stdev us</th><th>iterations</th><th>SOL us</th></tr></thead><tbody>\n";
  for (const auto& e : At(k, "evaluations")) {
    for (const auto& t : At(e, "timings")) {
      b += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td>"
          "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
          "<td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
          E(At(e, "evaluation_id")), E(At(e, "gpu")), HtmlEscape(ParamsText(At(t, "shape"))),
          E(At(t, "kind")), Num(At(t, "median_us"), "{:.3f}"), Num(At(t, "p90_us"), "{:.3f}"),
          Num(At(t, "min_us"), "{:.3f}"), Num(At(t, "stdev_us"), "{:.3f}"), E(At(t, "iterations")),
          Num(At(t, "sol_us"), "{:.3f}"));
    }
  }
  b += "</tbody></table>\n<h2>Evaluations</h2><table><thead><tr><th>evaluation</th>"
       "<th>verdict</th><th>time (us)</th><th>of SOL</th><th>GPU</th><th>arch</th><th>knobs</th>"
       "<th>purpose</th><th>message</th></tr></thead><tbody>\n";
  for (const auto& e : At(k, "evaluations")) {
    b += fmt::format(
        "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        E(At(e, "evaluation_id")), E(At(e, "verdict")), Num(At(e, "time_us")),
        Num(At(e, "sol_fraction"), "{:.3f}"), E(At(e, "gpu")), E(At(e, "arch")),
        HtmlEscape(ParamsText(At(e, "knobs"))), E(At(e, "purpose")), E(At(e, "message")));
  }
  b += "</tbody></table>\n";
  b += fmt::format("<h2>Diff against its parent {}</h2>{}\n", KernelLink(At(k, "parent_id")),
                   DiffHtml(At(k, "diff_parent")));
  b += "<h2>Diff against the baseline</h2>" + DiffHtml(At(k, "diff_baseline")) + "\n";
  b += "<h2>Source</h2><pre class=\"src\">" + E(At(k, "source")) + "</pre>\n";
  // The device-library headers it includes, as recorded with it: part of the kernel.
  if (k.contains("library_headers") && k["library_headers"].is_object()) {
    for (const auto& [name, text] : k["library_headers"].items()) {
      const std::string body = Text(text);
      b += fmt::format("<h2>Device library: {}</h2><details><summary>{} lines</summary>"
                       "<pre class=\"src\">{}</pre></details>\n",
                       HtmlEscape(name), std::count(body.begin(), body.end(), '\n'),
                       HtmlEscape(body));
    }
  }
  if (o.can_act) {
    b += fmt::format(
        "<p class=\"muted\">Re-verify: <code>curl -X POST -H 'Authorization: Bearer "
        "$WARPSMITH_TOKEN' http://HOST/api/kernels/{}/reverify</code></p>\n",
        E(At(k, "kernel_id")));
  }
  return Page("kernel " + Get(k, "kernel_id"), b, o);
}

std::string CampaignPage(const json& c, const PageOptions& o) {
  std::string b =
      fmt::format("<h1>Campaign {} <small>{}</small></h1>\n", E(At(c, "id")), E(At(c, "status")));
  if (o.refresh_s > 0) {
    b += fmt::format("<p class=\"muted\">live: this page reloads every {} s</p>\n", o.refresh_s);
  }
  b += fmt::format(
      "<p>{}</p><dl><dt>created</dt><dd>{}</dd><dt>updated</dt><dd>{}</dd>"
      "<dt>stop requested</dt><dd>{}</dd><dt>process alive</dt><dd>{}</dd></dl>\n",
      E(At(c, "message")), E(At(c, "created_at")), E(At(c, "updated_at")),
      E(At(c, "stop_requested")), E(At(c, "process_alive")));
  b += "<h2>Spend</h2><table><thead><tr><th></th><th>spent</th><th>budget</th></tr></thead>"
       "<tbody>\n";
  for (const auto& [key, v] : At(c, "spent").items()) {
    b += fmt::format("<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
                     HtmlEscape(key), E(v), E(At(At(c, "budget"), key.c_str())));
  }
  b += "</tbody></table>\n<h2>Problems</h2><table><thead><tr><th>problem</th><th>status</th>"
       "<th>attempts</th><th>evaluations</th><th>GPU s</th><th>cost $</th><th>best us</th>"
       "<th>of SOL</th><th>best kernel</th><th>by</th></tr></thead><tbody>\n";
  for (const auto& p : At(c, "problems")) {
    const json& best = At(p, "best");
    b += fmt::format(
        "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>\n",
        ProblemLink(Get(p, "problem")), E(At(p, "status")), E(At(p, "attempts")),
        E(At(p, "evaluations")), Num(At(p, "gpu_seconds"), "{:.1f}"),
        Num(At(p, "dollars"), "{:.2f}"), Num(At(best, "time_us")),
        Num(At(best, "sol_fraction"), "{:.3f}"), KernelLink(At(best, "kernel_id")),
        E(At(best, "agent")));
  }
  b += "</tbody></table>\n<h2>Spend per agent</h2><table><thead><tr><th>agent</th>"
       "<th>attempts</th><th>evaluations</th><th>GPU s</th><th>tokens in</th><th>tokens out</th>"
       "<th>cost $</th><th>verdicts</th></tr></thead><tbody>\n";
  for (const auto& a : At(c, "agents")) {
    json evals = nullptr, gs = nullptr;
    for (const auto& s : At(c, "spend_by_agent")) {
      if (At(s, "agent") == At(a, "agent")) {
        evals = At(s, "evaluations");
        gs = At(s, "gpu_seconds");
      }
    }
    std::string verdicts;
    for (const auto& [v, n] : At(a, "verdicts").items())
      verdicts += (verdicts.empty() ? "" : ", ") + v + " " + Text(n);
    b += fmt::format(
        "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td>{}</td></tr>\n",
        E(At(a, "agent")), E(At(a, "attempts")), E(evals), Num(gs, "{:.1f}"),
        E(At(a, "input_tokens")), E(At(a, "output_tokens")), Num(At(a, "cost_usd"), "{:.2f}"),
        HtmlEscape(verdicts));
  }
  b += fmt::format(
      "</tbody></table>\n<h2>Latest attempts (of {})</h2><table><thead><tr>"
      "<th>attempt</th><th>problem</th><th>agent</th><th>parent</th><th>status</th>"
      "<th>best evaluation</th><th>message</th></tr></thead><tbody>\n",
      E(At(c, "attempts_total")));
  const json& attempts = At(c, "recent_attempts");
  for (auto it = attempts.rbegin(); it != attempts.rend(); ++it) {
    const json& a = *it;
    b += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td></tr>\n",
        E(At(a, "attempt_id")), E(At(a, "problem")), E(At(a, "agent")),
        KernelLink(At(a, "parent_kernel_id")), E(At(a, "status")), E(At(a, "best_evaluation_id")),
        E(At(a, "message")));
  }
  b += "</tbody></table>\n";
  return Page("campaign " + Get(c, "id"), b, o);
}

std::string ErrorPage(int status, const std::string& message) {
  return Page(fmt::format("{}", status),
              fmt::format("<h1>{}</h1><p>{}</p>", status, HtmlEscape(message)), PageOptions{});
}

}  // namespace ws
