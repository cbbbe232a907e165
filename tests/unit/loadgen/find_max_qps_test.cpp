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
  ASSERT_TRUE(r->max_qps.has_value());
  EXPECT_DOUBLE_EQ(*r->max_qps, 5);
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
      ASSERT_TRUE(r->max_qps.has_value());
      EXPECT_LE(*r->max_qps, limit);
      EXPECT_GE(*r->max_qps, limit * (1 - tol)) << "limit " << limit << " tol " << tol;
    }
  }
}

TEST(FindMaxQps, WalksBelowAFailingStart) {
  FakeProbe fake{0.3, {}};
  auto r = find_max_qps(
      {}, [&](double q) { return fake(q); }, [&](double q) { return fake(q); });
  ASSERT_TRUE(r.ok());
  // 1 fails, and being the first probe is re-probed: it fails again, and that is trusted.
  // 0.5 fails, 0.25 passes, 0.375 and 0.3125 fail (above every rate that met: not re-probed),
  // 0.28125 passes; 0.3125 - 0.28125 is within 10% of 0.3125.
  EXPECT_EQ(rates(*r), (std::vector<double>{1, 1, 0.5, 0.25, 0.375, 0.3125, 0.28125}));
  EXPECT_FALSE(r->probes[0].reprobe);
  EXPECT_TRUE(r->probes[1].reprobe);
  for (size_t i = 2; i < r->probes.size(); ++i) EXPECT_FALSE(r->probes[i].reprobe) << i;
  ASSERT_TRUE(r->max_qps.has_value());
  EXPECT_DOUBLE_EQ(*r->max_qps, 0.28125);
}

TEST(FindMaxQps, NothingPassesGivesNoRate) {
  FakeProbe fake{0, {}};
  auto r = find_max_qps(
      {}, [&](double q) { return fake(q); }, [&](double q) { return fake(q); });
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->max_qps.has_value()) << *r->max_qps;
  EXPECT_GE(r->probes.back().qps, 0.005);  // stopped near min_qps (0.01)
  EXPECT_LE(r->probes.size(), 10u);
  // Only the first failure was re-probed: no rate ever met, so the others are not suspect.
  size_t reprobes = 0;
  for (const QpsProbe& p : r->probes) reprobes += p.reprobe ? 1 : 0;
  EXPECT_EQ(reprobes, 1u);
  EXPECT_TRUE(r->probes[1].reprobe);
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
  ASSERT_TRUE(r->max_qps.has_value());
  EXPECT_EQ(*r->max_qps, 12);
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
  ASSERT_TRUE(r->max_qps.has_value());
  EXPECT_DOUBLE_EQ(*r->max_qps, 4);

  // With the default 3 confirmations, all refuted: no rate is reported.
  probe.seen.clear();
  r = find_max_qps(
      {}, [&](double q) { return probe(q); }, [&](double q) { return confirm(q); });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->confirmations.size(), 3u);
  EXPECT_FALSE(r->max_qps.has_value()) << *r->max_qps;
}

TEST(FindMaxQps, EveryConfirmationFailingReportsNone) {
  FakeProbe probe{50, {}};
  const auto never = [](double) -> Result<bool> { return false; };
  MaxQpsSearchOptions o;
  o.max_confirmations = 2;
  auto r = find_max_qps(
      o, [&](double q) { return probe(q); }, never);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->max_qps.has_value()) << *r->max_qps;
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
  ASSERT_TRUE(r->max_qps.has_value());
  EXPECT_LE(*r->max_qps, 10);
  for (const QpsProbe& c : r->confirmations) {
    if (c.met) {
      EXPECT_DOUBLE_EQ(c.qps, *r->max_qps);
    }
  }
}

// A server that misses the SLOs on its first probe only (cold: its first load pays one-time
// costs) and otherwise meets them up to `limit`; records the probed rates.
struct ColdFirstProbe {
  double limit;
  std::vector<double> seen;
  Result<bool> operator()(double qps) {
    seen.push_back(qps);
    return seen.size() > 1 && qps <= limit;
  }
};

// The 8B run of issue 15: the first probe, at 64 req/s, missed on a cold server and the
// search never went above it again. The re-probe of the first failure finds the true max.
TEST(FindMaxQps, AColdFirstProbeIsReprobedAndTheTrueMaxFound) {
  ColdFirstProbe probe{100, {}};
  FakeProbe confirm{100, {}};
  MaxQpsSearchOptions o;
  o.start_qps = 64;
  o.max_qps = 400;
  auto r = find_max_qps(
      o, [&](double q) { return probe(q); }, [&](double q) { return confirm(q); });
  ASSERT_TRUE(r.ok());
  // 64 misses (cold), is re-probed and meets; 128 misses (above 64: trusted), 96 meets, 112
  // misses, 104 misses; 104 - 96 is within 10% of 104. 96 is confirmed.
  EXPECT_EQ(rates(*r), (std::vector<double>{64, 64, 128, 96, 112, 104}));
  EXPECT_FALSE(r->probes[0].met);
  EXPECT_TRUE(r->probes[1].met);
  EXPECT_TRUE(r->probes[1].reprobe);
  for (size_t i = 2; i < r->probes.size(); ++i) EXPECT_FALSE(r->probes[i].reprobe) << i;
  ASSERT_TRUE(r->max_qps.has_value());
  EXPECT_DOUBLE_EQ(*r->max_qps, 96);
  ASSERT_EQ(r->confirmations.size(), 1u);
  EXPECT_TRUE(r->confirmations[0].met);
}

TEST(FindMaxQps, AColdFirstProbeAtTheTrueMaxIsStillFound) {
  for (double limit : {0.7, 1.0, 3.3, 17.0, 64.0, 100.0, 333.0}) {
    for (double start : {1.0, 0.5 * limit, limit}) {
      ColdFirstProbe probe{limit, {}};
      FakeProbe confirm{limit, {}};
      MaxQpsSearchOptions o;
      o.start_qps = start;
      o.min_qps = std::min(o.min_qps, start);
      auto r = find_max_qps(
          o, [&](double q) { return probe(q); }, [&](double q) { return confirm(q); });
      ASSERT_TRUE(r.ok());
      ASSERT_TRUE(r->max_qps.has_value());
      EXPECT_LE(*r->max_qps, limit) << "limit " << limit << " start " << start;
      EXPECT_GE(*r->max_qps, limit * 0.9) << "limit " << limit << " start " << start;
      ASSERT_GE(r->probes.size(), 2u);
      EXPECT_TRUE(r->probes[1].reprobe);
      EXPECT_DOUBLE_EQ(r->probes[1].qps, start);
    }
  }
}

// A probe that fails once at a rate below one whose probe met (here 10 req/s, whose probe met
// before its longer confirmation was refuted): the outcome is not monotone, so the rate is
// re-probed, and the search trusts the second run.
TEST(FindMaxQps, AFailureBelowAMetRateIsReprobed) {
  int flakes = 1;  // the first probe at 9 req/s fails once
  std::vector<double> seen;
  const auto probe = [&](double q) -> Result<bool> {
    seen.push_back(q);
    if (q == 9 && flakes > 0) {
      --flakes;
      return false;
    }
    return q <= 10;
  };
  FakeProbe confirm{9.5, {}};
  MaxQpsSearchOptions o;
  o.start_qps = 8;
  auto r = find_max_qps(o, probe, [&](double q) { return confirm(q); });
  ASSERT_TRUE(r.ok());
  // 8 meets, 16 and 12 miss, 10 meets, 11 misses (stop: 11 - 10 <= 1.1); 10 is refuted. Between
  // 8 and 10, 9 misses below the 10 that met, is re-probed and meets; 10 - 9 <= 1 ends the
  // search, and 9 is confirmed. Trusting the flake would have ended at 8.5.
  EXPECT_EQ(rates(*r), (std::vector<double>{8, 16, 12, 10, 11, 9, 9}));
  EXPECT_TRUE(r->probes[6].reprobe);
  EXPECT_TRUE(r->probes[6].met);
  ASSERT_EQ(r->confirmations.size(), 2u);
  EXPECT_FALSE(r->confirmations[0].met);
  EXPECT_DOUBLE_EQ(r->confirmations[1].qps, 9);
  ASSERT_TRUE(r->max_qps.has_value());
  EXPECT_DOUBLE_EQ(*r->max_qps, 9);
}

// A re-probe that fails again is trusted: a rate that really fails is not reported, and it is
// re-probed only once.
TEST(FindMaxQps, AReprobedFailureThatRepeatsIsTrusted) {
  FakeProbe probe{10, {}};
  FakeProbe confirm{8.5, {}};
  MaxQpsSearchOptions o;
  o.start_qps = 8;
  auto r = find_max_qps(
      o, [&](double q) { return probe(q); }, [&](double q) { return confirm(q); });
  ASSERT_TRUE(r.ok());
  // 8 meets, 16 and 12 miss, 10 meets, 11 misses; 10 is refuted; 9 meets its probe (the probes
  // hold to 10), is refuted too; 8.5 meets and holds.
  for (const QpsProbe& p : r->probes) EXPECT_FALSE(p.reprobe) << p.qps;
  ASSERT_TRUE(r->max_qps.has_value());
  EXPECT_DOUBLE_EQ(*r->max_qps, 8.5);

  // Probes that really fail below a met rate: each is run twice, never a third time.
  const auto only8 = [](double q) -> Result<bool> { return q == 8; };
  FakeProbe never{0, {}};
  o.max_confirmations = 2;
  r = find_max_qps(o, only8, [&](double q) { return never(q); });
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->max_qps.has_value()) << *r->max_qps;
  ASSERT_EQ(r->confirmations.size(), 1u);  // 8 was refuted, and nothing below it met
  // 8 meets; 16, 12, 10, 9 and 8.5 miss above it (trusted). After 8 is refuted, the walk down
  // from it probes 4, 2, 1, ...: each below the 8 that met, so each is re-probed once, misses
  // again and is trusted.
  const std::vector<double> want = {8, 16, 12, 10, 9, 8.5, 4, 4, 2, 2, 1, 1};
  ASSERT_GE(r->probes.size(), want.size());
  for (size_t i = 0; i < r->probes.size(); ++i) {
    if (i < want.size()) EXPECT_DOUBLE_EQ(r->probes[i].qps, want[i]) << i;
    EXPECT_EQ(r->probes[i].reprobe, i >= 6 && i % 2 == 1) << i;
    if (i >= 2) {  // no rate three times in a row
      EXPECT_FALSE(r->probes[i].qps == r->probes[i - 1].qps &&
                   r->probes[i - 1].qps == r->probes[i - 2].qps)
          << i;
    }
  }
}

// The search's calls in order: 'p' for a probe, 'c' for a confirmation, with the rate.
struct CallLog {
  std::vector<std::pair<char, double>> calls;
  size_t count(char kind) const {
    size_t n = 0;
    for (const auto& c : calls) n += c.first == kind ? 1 : 0;
    return n;
  }
};

// Every confirmation is refuted: once max_confirmations have failed, the search ends at once,
// with no rate, and probes nothing more (a rate found then could not be confirmed).
TEST(FindMaxQps, StopsWhenItsConfirmationsAreSpent) {
  for (int max_confirmations : {1, 2, 3, 4}) {
    for (double limit : {1.05, 5.3, 17.0}) {
      CallLog log;
      MaxQpsSearchOptions o;
      o.max_confirmations = max_confirmations;
      auto r = find_max_qps(
          o,
          [&](double q) -> Result<bool> {
            log.calls.push_back({'p', q});
            return q <= limit;
          },
          [&](double q) -> Result<bool> {
            log.calls.push_back({'c', q});
            return false;
          });
      ASSERT_TRUE(r.ok());
      const std::string where = "max_confirmations " + std::to_string(max_confirmations) +
                                ", limit " + std::to_string(limit);
      EXPECT_FALSE(r->max_qps.has_value()) << where;
      EXPECT_FALSE(r->hit_max) << where;
      EXPECT_EQ(r->confirmations.size(), static_cast<size_t>(max_confirmations)) << where;
      EXPECT_EQ(log.count('c'), static_cast<size_t>(max_confirmations)) << where;
      // The last call is the last confirmation: no probe after it.
      ASSERT_FALSE(log.calls.empty());
      EXPECT_EQ(log.calls.back().first, 'c') << where << ": probed " << log.calls.back().second
                                             << " req/s after the last confirmation";
      EXPECT_EQ(log.count('p'), r->probes.size()) << where;
    }
  }
}

// The same with the walk down below a refuted rate that nothing under it met: with one
// confirmation allowed, the search stops after it instead of walking down towards min_qps.
TEST(FindMaxQps, ARefutedOnlyPassEndsTheSearchWithOneConfirmation) {
  CallLog log;
  MaxQpsSearchOptions o;
  o.start_qps = 8;
  o.min_qps = 0.01;
  o.max_confirmations = 1;
  auto r = find_max_qps(
      o,
      [&](double q) -> Result<bool> {
        log.calls.push_back({'p', q});
        return q == 8;
      },
      [&](double q) -> Result<bool> {
        log.calls.push_back({'c', q});
        return false;
      });
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->max_qps.has_value());
  // 8 meets; 16, 12, 10, 9 and 8.5 miss (above it, trusted); 8 is confirmed and refuted.
  const std::vector<std::pair<char, double>> want = {{'p', 8}, {'p', 16},  {'p', 12}, {'p', 10},
                                                     {'p', 9}, {'p', 8.5}, {'c', 8}};
  EXPECT_EQ(log.calls, want);
}

}  // namespace
}  // namespace novaserve
