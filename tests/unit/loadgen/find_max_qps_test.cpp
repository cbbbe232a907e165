#include "loadgen/find_max_qps.h"

#include <gtest/gtest.h>

#include <vector>

namespace novaserve {
namespace {

// A fake server that meets the SLOs up to `limit` req/s; records the probed rates.
struct FakeProbe {
  double limit;
  std::vector<double> seen;
  Result<bool> operator()(double qps) {
    seen.push_back(qps);
    return qps <= limit;
  }
};

std::vector<double> rates(const MaxQpsResult& r) {
  std::vector<double> out;
  for (const QpsProbe& p : r.probes) out.push_back(p.qps);
  return out;
}

TEST(FindMaxQps, DoublesThenBisectsToTolerance) {
  FakeProbe fake{5.3, {}};
  auto r = find_max_qps(
      {}, [&](double q) { return fake(q); }, [&](double q) { return fake(q); });
  ASSERT_TRUE(r.ok());
  // 1, 2, 4 pass, 8 fails; then 6 fails, 5 passes, 5.5 fails, and 5.5 - 5 = 0.5 <= 10% of
  // 5.5 ends the search.
  EXPECT_EQ(rates(*r), (std::vector<double>{1, 2, 4, 8, 6, 5, 5.5}));
  // Then 5 is confirmed by a second run.
  std::vector<double> all = rates(*r);
  all.push_back(5);
  EXPECT_EQ(fake.seen, all);
  ASSERT_EQ(r->confirmations.size(), 1u);
  EXPECT_TRUE(r->confirmations[0].met);
  EXPECT_DOUBLE_EQ(r->max_qps, 5);
  EXPECT_FALSE(r->hit_max);
  EXPECT_TRUE(r->probes[2].met);
  EXPECT_FALSE(r->probes[3].met);
}

TEST(FindMaxQps, ResultIsWithinToleranceOfTheTrueLimit) {
  for (double limit : {0.7, 1.0, 3.3, 17.0, 100.0, 333.0}) {
    for (double tol : {0.1, 0.02}) {
      FakeProbe fake{limit, {}};
      MaxQpsSearchOptions o;
      o.tolerance = tol;
      auto r = find_max_qps(
          o, [&](double q) { return fake(q); }, [&](double q) { return fake(q); });
      ASSERT_TRUE(r.ok());
      EXPECT_LE(r->max_qps, limit);
      EXPECT_GE(r->max_qps, limit * (1 - tol)) << "limit " << limit << " tol " << tol;
    }
  }
}

TEST(FindMaxQps, WalksBelowAFailingStart) {
  FakeProbe fake{0.3, {}};
  auto r = find_max_qps(
      {}, [&](double q) { return fake(q); }, [&](double q) { return fake(q); });
  ASSERT_TRUE(r.ok());
  // 1 and 0.5 fail, 0.25 passes, 0.375 and 0.3125 fail, 0.28125 passes; 0.3125 - 0.28125 is
  // within 10% of 0.3125.
  EXPECT_EQ(rates(*r), (std::vector<double>{1, 0.5, 0.25, 0.375, 0.3125, 0.28125}));
  EXPECT_DOUBLE_EQ(r->max_qps, 0.28125);
}

TEST(FindMaxQps, NothingPassesGivesZero) {
  FakeProbe fake{0, {}};
  auto r = find_max_qps(
      {}, [&](double q) { return fake(q); }, [&](double q) { return fake(q); });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->max_qps, 0);
  EXPECT_GE(r->probes.back().qps, 0.005);  // stopped near min_qps (0.01)
  EXPECT_LE(r->probes.size(), 10u);
}

TEST(FindMaxQps, StopsAtTheCap) {
  FakeProbe fake{1e9, {}};
  MaxQpsSearchOptions o;
  o.max_qps = 12;
  auto r = find_max_qps(
      o, [&](double q) { return fake(q); }, [&](double q) { return fake(q); });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(rates(*r), (std::vector<double>{1, 2, 4, 8, 12}));
  EXPECT_TRUE(r->hit_max);
  EXPECT_EQ(r->max_qps, 12);
}

TEST(FindMaxQps, ProbeErrorEndsTheSearch) {
  int calls = 0;
  auto r = find_max_qps(
      {},
      [&](double q) -> Result<bool> {
        if (++calls == 3) return Err(ErrorCode::kIo, "server went away");
        return true;
      },
      [](double) -> Result<bool> { return true; });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "server went away");
  EXPECT_EQ(calls, 3);
}

TEST(FindMaxQps, RejectsBadOptions) {
  const auto never = [](double) -> Result<bool> { return true; };
  MaxQpsSearchOptions o;
  o.start_qps = 0;
  EXPECT_FALSE(find_max_qps(o, never, never).ok());
  o = {};
  o.tolerance = 1.5;
  EXPECT_FALSE(find_max_qps(o, never, never).ok());
  o = {};
  o.max_qps = 0.5;
  EXPECT_FALSE(find_max_qps(o, never, never).ok());
  o = {};
  o.max_confirmations = 0;
  EXPECT_FALSE(find_max_qps(o, never, never).ok());
}

// A server whose short probes pass up to 5.3 req/s but whose twice-as-long runs hold only up to
// 4.2 (queues that build slowly): the search must not report a rate the long run refutes.
TEST(FindMaxQps, ARefutedRateIsNeverReported) {
  FakeProbe probe{5.3, {}};
  FakeProbe confirm{4.2, {}};
  MaxQpsSearchOptions o;
  o.max_confirmations = 4;
  auto r = find_max_qps(
      o, [&](double q) { return probe(q); }, [&](double q) { return confirm(q); });
  ASSERT_TRUE(r.ok());
  // 5 is refuted. Between 4 (the highest lower pass) and 5, the probe at 4.5 passes and is
  // within 10% of 5: refuted. Between 4 and 4.5, 4.25 passes: refuted. 4 is within 10% of
  // 4.25 and holds.
  const std::vector<std::pair<double, bool>> want = {
      {5, false}, {4.5, false}, {4.25, false}, {4, true}};
  ASSERT_EQ(r->confirmations.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_DOUBLE_EQ(r->confirmations[i].qps, want[i].first) << i;
    EXPECT_EQ(r->confirmations[i].met, want[i].second) << i;
  }
  EXPECT_DOUBLE_EQ(r->max_qps, 4);

  // With the default 3 confirmations, all refuted: no rate is reported.
  probe.seen.clear();
  r = find_max_qps(
      {}, [&](double q) { return probe(q); }, [&](double q) { return confirm(q); });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->confirmations.size(), 3u);
  EXPECT_EQ(r->max_qps, 0);
}

TEST(FindMaxQps, EveryConfirmationFailingReportsNone) {
  FakeProbe probe{50, {}};
  const auto never = [](double) -> Result<bool> { return false; };
  MaxQpsSearchOptions o;
  o.max_confirmations = 2;
  auto r = find_max_qps(
      o, [&](double q) { return probe(q); }, never);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->max_qps, 0);
  EXPECT_EQ(r->confirmations.size(), 2u);
  EXPECT_FALSE(r->hit_max);
}

TEST(FindMaxQps, TheCapIsConfirmedToo) {
  FakeProbe probe{1e9, {}};
  FakeProbe confirm{10, {}};
  MaxQpsSearchOptions o;
  o.max_qps = 12;
  auto r = find_max_qps(
      o, [&](double q) { return probe(q); }, [&](double q) { return confirm(q); });
  ASSERT_TRUE(r.ok());
  // The cap passes its probe but is refuted, so the search bisects below it; whatever it
  // reports was confirmed, and no confirmed rate is above what the long runs hold.
  EXPECT_FALSE(r->hit_max);
  EXPECT_LE(r->max_qps, 10);
  for (const QpsProbe& c : r->confirmations) {
    if (c.met) EXPECT_DOUBLE_EQ(c.qps, r->max_qps);
  }
}

}  // namespace
}  // namespace novaserve
