#include "fake_sse_server.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace novaserve::testing {

namespace net = boost::asio;
using net::ip::tcp;

FakeSseServer::FakeSseServer(Script script)
    : script_(std::move(script)),
      acceptor_(ioc_, tcp::endpoint(net::ip::address_v4::loopback(), 0)) {
  port_ = acceptor_.local_endpoint().port();
  accept_thread_ = std::thread([this] { accept_loop(); });
}

FakeSseServer::~FakeSseServer() {
  stop_ = true;
  // Wake the blocking accept with a connection of our own.
  try {
    net::io_context ioc;
    tcp::socket s(ioc);
    s.connect(tcp::endpoint(net::ip::address_v4::loopback(), port_));
  } catch (const std::exception&) {
  }
  accept_thread_.join();
  for (auto& t : workers_) t.join();
}

std::vector<SeenRequest> FakeSseServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void FakeSseServer::accept_loop() {
  while (!stop_) {
    boost::system::error_code ec;
    tcp::socket socket(ioc_);
    acceptor_.accept(socket, ec);
    if (ec || stop_) break;
    workers_.emplace_back([this, s = std::move(socket)]() mutable { serve(std::move(s)); });
  }
}

void FakeSseServer::serve(tcp::socket socket) {
  boost::system::error_code ec;
  std::string buf;
  const size_t head_end = net::read_until(socket, net::dynamic_buffer(buf), "\r\n\r\n", ec);
  if (ec) return;
  SeenRequest req;
  req.head = buf.substr(0, head_end);
  size_t length = 0;
  const size_t cl = req.head.find("Content-Length: ");
  if (cl != std::string::npos) length = std::stoul(req.head.substr(cl + 16));
  std::string body = buf.substr(head_end);
  if (body.size() < length) {
    const size_t have = body.size();
    body.resize(length);
    net::read(socket, net::buffer(&body[have], length - have), ec);
    if (ec) return;
  }
  req.body = body.substr(0, length);
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(req);
  }
  for (const Piece& p : script_(req)) {
    net::write(socket, net::buffer(p.bytes), ec);
    if (ec) return;
    if (p.pause.count() > 0) std::this_thread::sleep_for(p.pause);
  }
  socket.shutdown(tcp::socket::shutdown_both, ec);
}

std::vector<Piece> FakeSseServer::sse_response(const std::vector<std::string>& events,
                                               std::chrono::milliseconds gap) {
  std::vector<Piece> out;
  out.push_back(
      {"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
       "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
       gap});
  for (const std::string& e : events) {
    char size[16];
    std::snprintf(size, sizeof(size), "%zx\r\n", e.size());
    out.push_back({size + e + "\r\n", gap});
  }
  out.push_back({"0\r\n\r\n", std::chrono::milliseconds(0)});
  return out;
}

std::string FakeSseServer::plain_response(int status, const std::string& body,
                                          const std::string& content_type) {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: " + content_type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         body;
}

std::string text_event(const std::string& text) {
  nlohmann::json j = {{"id", "cmpl-1"},
                      {"object", "text_completion"},
                      {"choices", {{{"index", 0}, {"text", text}, {"finish_reason", nullptr}}}},
                      {"usage", nullptr}};
  return "data: " + j.dump() + "\n\n";
}

std::string usage_event(int prompt_tokens, int completion_tokens) {
  nlohmann::json j = {{"id", "cmpl-1"},
                      {"object", "text_completion"},
                      {"choices", nlohmann::json::array()},
                      {"usage",
                       {{"prompt_tokens", prompt_tokens},
                        {"completion_tokens", completion_tokens},
                        {"total_tokens", prompt_tokens + completion_tokens}}}};
  return "data: " + j.dump() + "\n\n";
}

}  // namespace novaserve::testing
