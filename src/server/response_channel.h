// How a handler answers one HTTP request: a whole response or a chunked stream, plus notice of
// the client going away. The transport implements it per request; tests implement it in memory.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <functional>
#include <string>

#include "server/http_message.h"

namespace novaserve {

/// All methods must be called on executor() (the connection's strand). After the exchange has
/// ended (response sent, or the connection died) every call is a no-op.
class ResponseChannel {
 public:
  virtual ~ResponseChannel() = default;

  /// The strand that serializes this request's work; engine callbacks post here.
  virtual boost::asio::any_io_executor executor() const = 0;

  /// Sends a whole response; ends the exchange.
  virtual void send(HttpResponse response) = 0;

  /// Starts a chunked response (SSE). `headers` are extra headers.
  virtual void start_stream(int status, const std::string& content_type,
                            const HeaderList& headers) = 0;
  /// Sends `data` as one chunk of the stream (empty data sends nothing).
  virtual void write(const std::string& data) = 0;
  /// Ends the stream; ends the exchange.
  virtual void end_stream() = 0;

  /// `fn` runs once, on the strand, when the client disconnects or the request's --timeout
  /// passes while the exchange is open. If that already happened, `fn` runs at once.
  virtual void on_abort(std::function<void()> fn) = 0;
};

}  // namespace novaserve
