#include "server_test_util.h"

#include <gtest/gtest.h>

#include <boost/asio/post.hpp>
#include <thread>

#include "tokenizer/byte_level.h"

namespace novaserve::testing {

std::unique_ptr<Tokenizer> byte_tokenizer() {
  Vocab v;
  v.model = VocabModel::kBpe;
  v.pre = "gpt-2";
  for (int b = 0; b < 256; ++b) v.tokens.push_back(bytes_to_byte_level(std::string(1, char(b))));
  v.types.assign(256, TokenType::kNormal);
  for (const char* special : {"<|end|>", "<|im_start|>", "<|im_end|>", "<|pad|>"}) {
    v.tokens.push_back(special);
    v.types.push_back(TokenType::kControl);
  }
  v.eos_id = kEndToken;
  auto t = Tokenizer::from_vocab(std::move(v));
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? std::move(t.value()) : nullptr;
}

std::vector<int32_t> byte_script(const std::string& text) {
  std::vector<int32_t> ids;
  for (char c : text) ids.push_back(static_cast<uint8_t>(c));
  return ids;
}

const char kChatMlTemplate[] =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

FakeEngine::Options script_options(const std::string& text, int32_t context_length) {
  FakeEngine::Options o;
  o.n_vocab = kTestVocab;
  o.context_length = context_length;
  o.script = byte_script(text);
  o.eog_token = kEndToken;
  return o;
}

TestModel::TestModel(FakeEngine::Options options)
    : tokenizer(byte_tokenizer()), engine(std::make_unique<FakeEngine>(std::move(options))) {
  services.engine = engine.get();
  services.tokenizer = tokenizer.get();
  auto tmpl = ChatTemplate::parse(kChatMlTemplate);
  EXPECT_TRUE(tmpl.ok()) << (tmpl.ok() ? "" : tmpl.error().message);
  if (tmpl.ok()) services.chat_template = std::move(tmpl.value());
  services.bos_token = "";
  services.eos_token = "<|end|>";
}

RecordingChannel::RecordingChannel(boost::asio::io_context& ioc)
    : strand_(boost::asio::make_strand(ioc)) {}

void RecordingChannel::note_thread() {
  if (!strand_.running_in_this_thread()) ++off_strand_calls;
}

void RecordingChannel::send(HttpResponse response) {
  note_thread();
  if (done) return;
  done = true;
  status = response.status;
  headers = std::move(response.headers);
  body = std::move(response.body);
}

void RecordingChannel::start_stream(int s, const std::string&, const HeaderList& h) {
  note_thread();
  if (done || streamed) return;
  streamed = true;
  status = s;
  headers = h;
}

void RecordingChannel::write(const std::string& data) {
  note_thread();
  if (done || !streamed || data.empty()) return;
  chunks.push_back(data);
  body += data;
}

void RecordingChannel::end_stream() {
  note_thread();
  if (streamed) done = true;
}

void RecordingChannel::on_abort(std::function<void()> fn) {
  note_thread();
  if (aborted_) {
    fn();
  } else {
    abort_ = std::move(fn);
  }
}

void RecordingChannel::disconnect() {
  boost::asio::post(strand_, [this] {
    aborted_ = true;
    done = true;  // nothing more reaches a gone client
    if (abort_) abort_();
  });
}

bool run_until(boost::asio::io_context& ioc, const std::function<bool()>& done,
               std::chrono::milliseconds timeout) {
  ioc.restart();  // a previous run may have stopped it when its work ran out
  auto guard = boost::asio::make_work_guard(ioc);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    ioc.run_one_for(std::chrono::milliseconds(10));
  }
  return done();
}

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return pred();
}

std::vector<nlohmann::ordered_json> sse_events(const std::string& body, bool* saw_done) {
  std::vector<nlohmann::ordered_json> out;
  if (saw_done) *saw_done = false;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) break;
    const std::string event = body.substr(pos, end - pos);
    pos = end + 2;
    if (event.rfind("data: ", 0) != 0) continue;
    const std::string payload = event.substr(6);
    if (payload == "[DONE]") {
      if (saw_done) *saw_done = true;
      continue;
    }
    out.push_back(nlohmann::ordered_json::parse(payload));
  }
  return out;
}

}  // namespace novaserve::testing
