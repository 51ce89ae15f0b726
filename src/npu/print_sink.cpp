// The launch's printf / dump_tensor output in (block, core, program) order, streamed (see
// print_sink.h). The order is a function of the program alone, so the output is the same for
// any number of host threads; only how early a line appears depends on the schedule.
#include "print_sink.h"

#include <ostream>

namespace tl::npu {

PrintSink::~PrintSink() {
  close_spill();
}

void PrintSink::open(std::ostream* out, bool hold) {
  std::lock_guard<std::mutex> g(mu_);
  out_ = out;
  hold_ = hold;
  cursor_ = 0;
  held_.clear();
  in_memory_ = 0;
  close_spill();
}

void PrintSink::line(int64_t core, std::string_view text) {
  std::lock_guard<std::mutex> g(mu_);
  if (!hold_ && core == cursor_) {
    *out_ << text << '\n';
    return;
  }
  Held& h = held_[core];
  h.text.append(text);
  h.text += '\n';
  in_memory_ += text.size() + 1;
  if (in_memory_ > kMemoryBound) spill();
}

void PrintSink::done(int64_t core) {
  std::lock_guard<std::mutex> g(mu_);
  if (!hold_ && core < cursor_) return;
  held_[core].done = true;
  if (!hold_) advance();
}

void PrintSink::advance() {
  for (;;) {
    auto it = held_.find(cursor_);
    if (it == held_.end()) return;  // the cursor core is running and has held nothing
    write(it->second);
    if (!it->second.done) return;  // from now on its lines go straight out
    held_.erase(it);
    ++cursor_;
  }
}

void PrintSink::write(Held& h) {
  if (!h.spilled.empty() && spill_) {
    std::fflush(spill_);
    std::string buf;
    for (const auto& [off, bytes] : h.spilled) {
      buf.resize(bytes);
      if (std::fseek(spill_, off, SEEK_SET) != 0 ||
          std::fread(buf.data(), 1, bytes, spill_) != bytes)
        buf = "<printf output lost: the temporary file could not be read back>\n";
      out_->write(buf.data(), static_cast<std::streamsize>(buf.size()));
    }
    std::fseek(spill_, 0, SEEK_END);
  }
  h.spilled.clear();
  *out_ << h.text;
  in_memory_ -= h.text.size();
  h.text.clear();
  h.text.shrink_to_fit();
}

void PrintSink::spill() {
  if (!spill_) {
    spill_ = std::tmpfile();
    spill_end_ = 0;
    // Without a temporary file the lines stay in memory: correct output, only larger.
    if (!spill_) return;
  }
  for (auto& [core, h] : held_) {
    if (h.text.empty()) continue;
    if (std::fseek(spill_, spill_end_, SEEK_SET) != 0 ||
        std::fwrite(h.text.data(), 1, h.text.size(), spill_) != h.text.size())
      return;  // disk full: keep the rest in memory
    h.spilled.emplace_back(spill_end_, h.text.size());
    spill_end_ += static_cast<long>(h.text.size());
    in_memory_ -= h.text.size();
    h.text.clear();
    h.text.shrink_to_fit();
  }
}

void PrintSink::finish() {
  std::lock_guard<std::mutex> g(mu_);
  if (!out_) return;
  for (auto& [core, h] : held_) write(h);
  held_.clear();
  out_->flush();
  close_spill();
}

void PrintSink::discard() {
  std::lock_guard<std::mutex> g(mu_);
  held_.clear();
  in_memory_ = 0;
  close_spill();
}

void PrintSink::close_spill() {
  if (spill_) std::fclose(spill_);
  spill_ = nullptr;
  spill_end_ = 0;
}

}  // namespace tl::npu
