// The timing model's reports (tl/npu/timing.h): the Chrome trace-event JSON, the HTML/SVG
// timeline and the per-pipe busy table.
#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>
#include <set>

#include "tl/npu/timing.h"

namespace tl::npu {
namespace {

std::string json_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) continue;
    o += ch;
  }
  return o;
}

std::string html_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '<')
      o += "&lt;";
    else if (ch == '>')
      o += "&gt;";
    else if (ch == '&')
      o += "&amp;";
    else if (ch == '"')
      o += "&quot;";
    else
      o += ch;
  }
  return o;
}

const char* pipe_color(Pipe p) {
  switch (p) {
    case Pipe::S:
      return "#9e9e9e";
    case Pipe::V:
      return "#43a047";
    case Pipe::M:
      return "#e53935";
    case Pipe::MTE1:
      return "#fb8c00";
    case Pipe::MTE2:
      return "#1e88e5";
    case Pipe::MTE3:
      return "#8e24aa";
    case Pipe::FIX:
      return "#00897b";
    default:
      return "#000000";
  }
}

const char* slot_name(int s) {
  return s == 0 ? "AIC" : s == 1 ? "AIV0" : "AIV1";
}

}  // namespace

void write_chrome_trace(const Profile& p, std::ostream& os) {
  const double to_us = 1.0 / (p.clock_ghz * 1e3);
  os << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"kernel\":\"" << json_escape(p.kernel)
     << "\",\"target\":\"" << json_escape(p.target) << "\",\"total_us\":" << p.total_us
     << "},\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first) os << ",\n";
    first = false;
  };
  std::set<std::pair<int64_t, int>> threads;
  for (const auto& ti : p.instrs)
    threads.insert({p.cores[ti.core].block, ti.core % 3 * 8 + static_cast<int>(ti.pipe)});
  std::set<int64_t> blocks;
  for (const auto& [b, tid] : threads) {
    if (blocks.insert(b).second) {
      sep();
      os << fmt::format(
          R"J({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"block {} (core group {})"}}}})J",
          b, b, p.cores[b * 3].phys);
      sep();
      os << fmt::format(
          R"J({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}})J", b,
          b);
    }
    sep();
    os << fmt::format(
        R"J({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"{} {}"}}}})J", b,
        tid, slot_name(tid / 8), pipe_name(static_cast<Pipe>(tid % 8)));
    sep();
    os << fmt::format(
        R"J({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})J",
        b, tid, tid);
  }
  for (const auto& ti : p.instrs) {
    sep();
    std::string name = ti.loc.empty() ? ti.name : ti.name + " @" + ti.loc;
    std::string args =
        fmt::format(R"J("loc":"{}","cycles":{:.1f})J", json_escape(ti.loc), ti.end - ti.start);
    if (ti.bytes) args += fmt::format(R"J(,"bytes":{})J", ti.bytes);
    if (ti.m) args += fmt::format(R"J(,"m":{},"n":{},"k":{})J", ti.m, ti.n, ti.k);
    os << fmt::format(
        R"J({{"ph":"X","name":"{}","cat":"{}","pid":{},"tid":{},"ts":{:.4f},"dur":{:.4f},"args":{{{}}}}})J",
        json_escape(name), pipe_name(ti.pipe), p.cores[ti.core].block,
        ti.core % 3 * 8 + static_cast<int>(ti.pipe), ti.start * to_us,
        std::max(0.0, ti.end - ti.start) * to_us, args);
  }
  os << "\n]}\n";
}

void write_html_timeline(const Profile& p, std::ostream& os, int max_blocks) {
  // Rows: (core, pipe) pairs with at least one instruction, for the first max_blocks blocks.
  std::map<std::pair<int, int>, int> rows;
  double t_end = 0;
  for (const auto& ti : p.instrs)
    if (p.cores[ti.core].block < max_blocks) {
      rows[{ti.core, static_cast<int>(ti.pipe)}] = 0;
      t_end = std::max(t_end, ti.end);
    }
  int r = 0;
  for (auto& [k, v] : rows) v = r++;
  const double label_w = 150, width = 1400, row_h = 16, top = 30;
  const double plot_w = width - label_w - 10;
  const double height = top + row_h * r + 30;
  const double to_us = 1.0 / (p.clock_ghz * 1e3);
  const double span = std::max(t_end, 1.0);
  auto x = [&](double cyc) { return label_w + cyc / span * plot_w; };
  os << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << html_escape(p.kernel)
     << " timeline</title>\n<style>body{font-family:sans-serif;font-size:12px} "
        "rect.i:hover{stroke:#000}"
        " text{font-size:10px}</style></head><body>\n";
  os << fmt::format(
      "<h3>{} on {}: {:.0f} cycles = {:.2f} us ({} blocks on {} core groups; first {} blocks "
      "shown)</h3>\n",
      html_escape(p.kernel), html_escape(p.target), p.total_cycles, p.total_us, p.num_blocks,
      p.physical_blocks, std::min<int64_t>(max_blocks, p.num_blocks));
  os << "<p>";
  for (Pipe pp : {Pipe::S, Pipe::V, Pipe::M, Pipe::MTE1, Pipe::MTE2, Pipe::MTE3, Pipe::FIX})
    os << fmt::format(
        "<span style=\"background:{};color:#fff;padding:1px 6px;margin-right:4px\">{}</span>",
        pipe_color(pp), pipe_name(pp));
  os << " white space in a row = the pipe is idle (bubble). Hover a box for the instruction.</p>\n";
  os << fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\">\n",
                    width, height);
  // Time axis.
  double us_span = span * to_us;
  double step = std::pow(10.0, std::floor(std::log10(std::max(us_span, 1e-6) / 10)));
  if (us_span / step > 25)
    step *= 5;
  else if (us_span / step > 12)
    step *= 2;
  for (double u = 0; u <= us_span + 1e-12; u += step) {
    double xx = x(u / to_us);
    os << fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#ddd\"/>", xx,
                      top - 5, xx, height - 25);
    os << fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:g} us</text>\n", xx,
                      top - 10, u);
  }
  for (const auto& [k, row] : rows) {
    double y = top + row * row_h;
    if (row % 2 == 0)
      os << fmt::format("<rect x=\"0\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f7f7f7\"/>", y,
                        width, row_h);
    os << fmt::format("<text x=\"4\" y=\"{}\">{} {}</text>\n", y + row_h - 4,
                      html_escape(p.cores[k.first].name), pipe_name(static_cast<Pipe>(k.second)));
  }
  int64_t drawn = 0;
  for (const auto& ti : p.instrs) {
    if (p.cores[ti.core].block >= max_blocks) continue;
    if (++drawn > 40000) break;  // keep the file small
    double y = top + rows[{ti.core, static_cast<int>(ti.pipe)}] * row_h + 2;
    double x0 = x(ti.start), w = std::max(0.5, x(ti.end) - x0);
    os << fmt::format(
        "<rect class=\"i\" x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\" "
        "fill-opacity=\"0.8\">"
        "<title>{} {} [{:.3f} - {:.3f} us, {:.0f} cycles]{}</title></rect>\n",
        x0, y, w, row_h - 4, pipe_color(ti.pipe), html_escape(ti.name), html_escape(ti.loc),
        ti.start * to_us, ti.end * to_us, ti.end - ti.start,
        ti.bytes ? fmt::format(" {} B", ti.bytes)
                 : (ti.m ? fmt::format(" m={} n={} k={}", ti.m, ti.n, ti.k) : ""));
  }
  os << fmt::format("<text x=\"{}\" y=\"{}\">time (us)</text>\n", label_w, height - 8);
  os << "</svg>\n</body></html>\n";
}

void print_profile(const Profile& p, std::ostream& os, int max_groups) {
  os << fmt::format(
      "{} on {} (timed): {:.0f} cycles = {:.2f} us at {:.2f} GHz; {} blocks on {} core groups, "
      "{} events; GM traffic {:.1f} MB ({:.1f} MB to HBM)\n",
      p.kernel, p.target, p.total_cycles, p.total_us, p.clock_ghz, p.num_blocks, p.physical_blocks,
      p.events, p.gm_bytes / 1e6, p.gm_hbm_bytes / 1e6);
  os << fmt::format(
      "task duration {:.2f} us: the kernel plus {:.2f} us of launch overhead (what profilers "
      "report as Task Duration)\n",
      p.task_us(), p.launch_overhead_us);
  const std::vector<Pipe> aic = {Pipe::S, Pipe::M, Pipe::MTE1, Pipe::MTE2, Pipe::MTE3, Pipe::FIX};
  const std::vector<Pipe> aiv = {Pipe::S, Pipe::V, Pipe::MTE2, Pipe::MTE3};
  os << fmt::format("busy % of the kernel time per core group ({:.2f} us):\n", p.total_us);
  std::string hdr = fmt::format("{:>8} |", "group");
  for (Pipe q : aic) hdr += fmt::format(" AIC.{:<4}", pipe_name(q));
  hdr += " |";
  for (Pipe q : aiv) hdr += fmt::format(" AIV.{:<4}", pipe_name(q));
  os << hdr << "\n";
  // Sum per group.
  int groups = std::max(1, p.physical_blocks);
  std::vector<std::array<double, kNumPipes>> gc(groups), gv(groups);
  for (auto& a : gc) a.fill(0);
  for (auto& a : gv) a.fill(0);
  for (const auto& c : p.cores) {
    int g = std::clamp(c.phys, 0, groups - 1);
    for (int q = 0; q < kNumPipes; ++q)
      (c.slot == 0 ? gc : gv)[g][q] += c.slot == 0 ? c.busy[q] : c.busy[q] / 2;
  }
  auto row = [&](const std::string& label, const std::array<double, kNumPipes>& c,
                 const std::array<double, kNumPipes>& v) {
    std::string s = fmt::format("{:>8} |", label);
    double T = std::max(p.total_cycles, 1.0);
    for (Pipe q : aic) s += fmt::format(" {:>7.1f}%", 100 * c[static_cast<int>(q)] / T);
    s += " |";
    for (Pipe q : aiv) s += fmt::format(" {:>7.1f}%", 100 * v[static_cast<int>(q)] / T);
    os << s << "\n";
  };
  for (int g = 0; g < std::min(groups, max_groups); ++g) row(std::to_string(g), gc[g], gv[g]);
  if (groups > max_groups) os << fmt::format("{:>8} |\n", "...");
  std::array<double, kNumPipes> ac{}, av{};
  for (int g = 0; g < groups; ++g)
    for (int q = 0; q < kNumPipes; ++q) {
      ac[q] += gc[g][q] / groups;
      av[q] += gv[g][q] / groups;
    }
  row("all", ac, av);
}

double Profile::busy_ratio(Pipe p, CoreKind kind) const {
  if (total_cycles <= 0) return 0;
  double sum = 0;
  int n = 0;
  for (const auto& c : cores) {
    if ((c.slot == 0) != (kind == CoreKind::Cube) || c.instructions == 0) continue;
    sum += c.busy[static_cast<int>(p)];
    ++n;
  }
  // Cores of later waves share a physical group: normalise per physical core.
  int groups = std::max(1, physical_blocks) * (kind == CoreKind::Cube ? 1 : 2);
  int denom = std::min(n, groups);
  return denom ? sum / denom / total_cycles : 0;
}

}  // namespace tl::npu
