// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The aggregation core: job table, call decisions (through the scheduler,
// Defer included), the block path (membership, duplicate filtering, Seg
// reduction, completion, fan-out of the result).
#include "aggregator.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

#include "log.h"

namespace ina::agg {

Aggregator::Aggregator(const AggregatorConfig &cfg, const SchedulerFactory &make_scheduler,
                       Sink &sink)
    : cfg_(cfg), pool_(cfg.segs, cfg.seg_bytes), scheduler_(make_scheduler(pool_)), sink_(sink)
{
    if (!scheduler_) {
        throw std::invalid_argument("Aggregator: no scheduler");
    }
    if (cfg_.time_blocks) {
        seg_since_.resize(pool_.size());
    }
}

uint32_t Aggregator::max_window() const { return std::min(cfg_.max_window, pool_.size()); }

const Job *Aggregator::find_job(uint32_t jid) const
{
    auto it = jobs_.find(jid);
    return it == jobs_.end() ? nullptr : it->second.get();
}

void Aggregator::reject(Member *to, const ina_proto_hdr_t &req, ina_proto_status_t status,
                        const char *why)
{
    ++counters_.rejected[status];
    // The first rejection of each kind is worth a warning; repeats are noise.
    LogLevel lvl = seen_reject_[status] ? LogLevel::kDebug : LogLevel::kWarn;
    seen_reject_[status] = true;
    INA_LOG(lvl,
            "rejected %s from peer %" PRIu64 " (jid %u rank %u mid %" PRIu64 " sid %u): %s, %s",
            ina_proto_type_name(req.type), to ? to->id : 0, req.jid, req.rank, req.mid, req.sid,
            ina_proto_status_name(status), why);
    if (to != nullptr) {
        sink_.error(*to, req, status, why, false);
    }
}

void Aggregator::refuse(Job &job, Call &call, Member &from, const ina_proto_hdr_t &h,
                        ina_proto_status_t status, const char *why)
{
    ++job.stats().errors;
    reject(&from, h, status, why);
    if (job.children() && !call.finished) {
        // A child agent's partial stands for its whole leaf: without it the
        // block never completes. The call ends on every member of every
        // leaf alike (ERROR after the GRANT, DENY before).
        abort_call(job, h.mid, call, status, "a child agent's partial was refused",
                   kAbortTellParent);
    }
}

// ---------------------------------------------------------------- jobs

Job &Aggregator::new_job(Member &from, const JobKey &key, const JobCap &cap,
                         std::vector<uint32_t> node_ids, uint32_t asked_window,
                         const TreeDesc &tree, uint64_t tenant)
{
    // A window larger than the pool (or than a job may hold) could never be
    // granted.
    const uint32_t most = cfg_.limits.job_segs != 0 ? cfg_.limits.job_segs : pool_.size();
    uint32_t window = std::min<uint32_t>({asked_window, cfg_.max_window, pool_.size(), most});
    uint32_t jid = next_jid_;
    auto job =
        std::make_unique<Job>(jid, window, key, std::move(node_ids), asked_window, tree, &from);
    job->set_tenant(tenant); // before the uplink opens it at the parent
    job->set_cap(cap);
    const uint32_t nmembers = job->nmembers();
    const JobInfo info{jid, nmembers, job->topology().nnodes(), window, tenant};
    Job &ref = *job;
    jobs_.emplace(jid, std::move(job));
    child_jobs_ += ref.children() ? 1 : 0;
    if (++next_jid_ == 0) {
        next_jid_ = 1; // JID 0 means "none"
    }
    ++counters_.jobs_created;
    INA_DEBUG("job %u created: %u members on %u nodes, window %u", jid, nmembers, info.nnodes,
              window);
    scheduler_->on_job_created(info);
    // What its members may send of MID 0 before its verdict: every member
    // hears the same word, whenever it opens.
    ref.set_ahead_at_open(ref.children() ? window : ahead_word(ref));
    if (ref.uplinked()) {
        ref.set_up_state(Job::UpState::kOpening);
        uplink_->open(ref); // calls wait for it (decide)
    }
    return ref;
}

ina_proto_status_t Aggregator::join_job(Job &job, uint32_t rank, Member &from)
{
    bool again = job.is_member(rank, &from);
    if (!again) {
        from.memberships_.reserve(from.memberships_.size() + 1); // no throw after the join
    }
    ina_proto_status_t st = job.join(rank, &from);
    if (st == INA_PROTO_OK && !again) {
        from.memberships_.emplace_back(job.jid(), rank);
    }
    return st;
}

const char *Aggregator::over_limit(const Member &from, const ina_proto_hdr_t &h) const
{
    const auto &lim = cfg_.limits;
    if (h.count > lim.members) {
        return "more members than --max-members";
    }
    if (from.memberships_.size() >= lim.jobs_per_member) {
        return "the connection is in --max-jobs-per-conn jobs already";
    }
    return nullptr;
}

void Aggregator::job_open(Member &from, const ina_proto_hdr_t &h, const void *payload,
                          size_t payload_len)
{
    const auto *bytes = static_cast<const std::byte *>(payload);
    JobKey key;
    JobCap cap;
    std::memcpy(key.data(), bytes, key.size());
    std::memcpy(cap.data(), bytes + key.size(), cap.size());
    // The payload may be unaligned: copy the node ids out.
    std::vector<uint32_t> nodes(h.count);
    std::memcpy(nodes.data(), bytes + key.size() + cap.size(), nodes.size() * sizeof(uint32_t));
    TreeDesc tree{ina_proto_job_open_leaves(&h), ina_proto_job_open_leaf(&h),
                  (h.flags & INA_PROTO_F_CHILDREN) != 0, {}};
    const uint32_t levels = ina_proto_job_open_levels_above(&h, payload_len);
    tree.above.reserve(levels);
    for (uint32_t i = 0; i < levels; ++i) {
        const ina_proto_tree_level_t l = ina_proto_job_open_level_above(&h, payload, i);
        if (l.groups == 0 || l.groups > INA_PROTO_MAX_MEMBERS || l.group >= l.groups) {
            reject(&from, h, INA_PROTO_ERR_MALFORMED,
                   "JOB_OPEN with a level above that places no agent");
            return;
        }
        tree.above.push_back(l);
    }
    if (tree.goes_up() && !uplink_up_) {
        // Its calls would wait forever for the other leaves' members.
        ++counters_.rejected[INA_PROTO_ERR_UPSTREAM];
        INA_WARN("JOB_OPEN of a job over %u leaf agents refused: %s", tree.groups,
                 uplink_ == nullptr ? "this agent has no parent (--parent)"
                                    : "the parent agent is lost (connecting again)");
        sink_.job_opened(from, h, 0, 0, 0, INA_PROTO_ERR_UPSTREAM);
        return;
    }
    Job *job = nullptr;
    ina_proto_status_t st = INA_PROTO_OK;
    const char *why = nullptr;
    auto kit = keys_.find(key);
    if (cap == JobCap{}) {
        st = INA_PROTO_ERR_FORBIDDEN;
        why = "no capability";
    } else if (kit != keys_.end() && !jobs_.at(kit->second)->cap_matches(cap)) {
        // Checked before anything else of the job: a refusal must not tell
        // a guesser whether it got the description right.
        st = INA_PROTO_ERR_FORBIDDEN;
        why = "not the job's capability";
    } else if (kit != keys_.end() && jobs_.at(kit->second)->is_member(h.rank, &from)) {
        // Opening again as the same member: idempotent, no new slot.
    } else if ((why = over_limit(from, h)) != nullptr) {
        st = INA_PROTO_ERR_LIMIT;
    }
    if (st == INA_PROTO_OK && kit == keys_.end()) {
        auto slot = keys_.emplace(key, 0).first; // room first: nothing throws after the job
        try {
            job = &new_job(from, key, cap, std::move(nodes), h.window, tree,
                           ina_proto_job_open_tenant(&h));
            job->set_stripe(ina_proto_job_open_stripe_word(&h));
        } catch (...) {
            keys_.erase(slot);
            throw;
        }
        slot->second = job->jid();
    } else if (st == INA_PROTO_OK) {
        job = jobs_.at(kit->second).get();
        if (!job->same_description(nodes, h.window, tree)) {
            st = INA_PROTO_ERR_MISMATCH;
            why = "described differently than by its first member";
        }
    }
    if (st == INA_PROTO_OK) {
        st = join_job(*job, h.rank, from);
        why = st != INA_PROTO_OK ? ina_proto_status_name(st) : nullptr;
    }
    if (st == INA_PROTO_OK && job->complete()) {
        lease_back_ = true; // calls waiting for this member: ask again now
    }
    if (st != INA_PROTO_OK) {
        ++counters_.rejected[st];
        counters_.forbidden_opens += st == INA_PROTO_ERR_FORBIDDEN;
        counters_.limit_refusals += st == INA_PROTO_ERR_LIMIT;
        // Logged by who asked, never by the job it named (a foreign opener
        // learns nothing, and the log does not say which job was probed).
        // A prober repeats itself: the first of each reason is a warning,
        // the rest are counted (forbidden_opens, limit_refusals).
        const bool first = refusals_warned_.insert(why).second;
        const LogLevel lvl = !first && st != INA_PROTO_ERR_MISMATCH ? LogLevel::kDebug
                                                                    : LogLevel::kWarn;
        INA_LOG(lvl, "JOB_OPEN as rank %u from peer %" PRIu64 " refused (%s): %s%s", h.rank,
                from.id, ina_proto_status_name(st), why,
                lvl == LogLevel::kWarn && st != INA_PROTO_ERR_MISMATCH
                    ? " (more of these are counted, logged at debug)"
                    : "");
        sink_.job_opened(from, h, 0, 0, 0, st);
    } else {
        sink_.job_opened(from, h, job->jid(), job->window(), job->ahead_at_open(), st);
    }
    settle();
}

void Aggregator::job_leave(Member &from, const ina_proto_hdr_t &h)
{
    auto it = jobs_.find(h.jid);
    if (it == jobs_.end()) {
        reject(&from, h, INA_PROTO_ERR_NO_JOB, "leave of an unknown job");
    } else if (!it->second->is_member(h.rank, &from)) {
        reject(&from, h, INA_PROTO_ERR_NOT_MEMBER, "leave by a non-member");
    } else {
        leave_job(h.jid, h.rank, from);
    }
    settle();
}

void Aggregator::call_word(Member &from, const ina_proto_hdr_t &h)
{
    const bool cost = h.type == INA_PROTO_HOST_COST; // else CALL_TIME (the same fields)
    Job *job = member_job(from, h, cost ? "a HOST_COST for an unknown job"
                                        : "a CALL_TIME for an unknown job");
    if (job == nullptr) {
        return;
    }
    const uint64_t ns = ina_proto_timing_ns(&h);
    if (ns == 0) {
        reject(&from, h, INA_PROTO_ERR_MALFORMED,
               cost ? "a HOST_COST of no time" : "a CALL_TIME of no time");
        return;
    }
    const uint64_t bytes = ina_proto_timing_bytes(&h);
    const double secs = static_cast<double>(ns) * 1e-9;
    if (cost) {
        ++counters_.host_costs;
        ++job->stats().host_costs;
        scheduler_->on_host_cost(job->jid(), h.coll, bytes, secs);
    } else {
        ++counters_.call_times;
        ++job->stats().call_times;
        scheduler_->on_call_time(job->jid(), h.coll, bytes, secs);
    }
}

void Aggregator::member_lost(Member &m)
{
    auto memberships = m.memberships_; // leave_job edits the list
    for (const auto &ms : memberships) {
        leave_job(ms.first, ms.second, m);
    }
    // Jobs it created that nobody ever joined can never be used.
    std::vector<uint32_t> orphans;
    for (const auto &kv : jobs_) {
        if (kv.second->orphaned_by(&m)) {
            orphans.push_back(kv.first);
        }
    }
    for (uint32_t jid : orphans) {
        free_job(jid);
    }
    settle();
}

void Aggregator::leave_job(uint32_t jid, uint32_t rank, Member &m)
{
    auto it = jobs_.find(jid);
    // The calls the leaver had not finished, listed before anything changes:
    // the list allocates, and a std::bad_alloc (which the agent survives)
    // must not leave the member out of the job with its blocks still kept
    // in a deferred call (they name the member, which may be gone next).
    const std::vector<uint64_t> open =
        it != jobs_.end() ? it->second->open_calls() : std::vector<uint64_t>();
    auto &ms = m.memberships_;
    ms.erase(std::remove(ms.begin(), ms.end(), std::make_pair(jid, rank)), ms.end());
    if (it == jobs_.end() || !it->second->leave(rank, &m)) {
        return;
    }
    Job &job = *it->second;
    if (job.dead()) {
        free_job(jid);
        return;
    }
    // Calls the leaver had not finished (granted or still deferred) can never
    // complete: end them now on the survivors with an ERROR for the call
    // (what a rejected block gives) instead of letting them wait for their
    // progress timeout. All of them end (leases and kept blocks back) before
    // anybody is told, which may throw.
    for (uint64_t mid : open) {
        end_call(jid, mid, *job.find_call(mid));
    }
    for (uint64_t mid : open) {
        INA_INFO("job %u mid %" PRIu64 ": rank %u left in the middle of the call, aborted", jid,
                 mid, rank);
        abort_call(job, mid, *job.find_call(mid), INA_PROTO_ERR_NOT_MEMBER,
                   "a member left in the middle of the call", kAbortTellParent | kAbortInFlight);
    }
    // The leaver no longer holds back the forgetting of old calls.
    job.retire();
}

void Aggregator::free_job(uint32_t jid)
{
    auto it = jobs_.find(jid);
    if (it == jobs_.end()) {
        return;
    }
    // Out of the tables, its calls ended and their leases back before
    // anything that may throw (the uplink, the log line): a std::bad_alloc
    // (which the agent survives) must not leave a job nobody can free.
    const std::unique_ptr<Job> gone = std::move(it->second);
    Job &job = *gone;
    job.finish_open_calls([&](uint64_t mid, Call &call) { end_call(jid, mid, call); });
    keys_.erase(job.key());
    jobs_.erase(it);
    child_jobs_ -= job.children() ? 1 : 0;
    ++counters_.jobs_freed;
    scheduler_->on_job_freed(jid);
    if (job.uplinked() && job.up_state() != Job::UpState::kFailed) {
        uplink_->leave(job);
    }
    const Job::Decisions &d = job.decisions();
    std::string denied;
    for (unsigned st = 1; st <= INA_PROTO_STATUS_MAX; ++st) {
        if (d.denied[st] != 0) {
            denied += std::string(" ") + ina_proto_status_name(st) + "=" +
                      std::to_string(d.denied[st]);
        }
    }
    INA_INFO("job %u freed: calls granted=%" PRIu64 " deferred=%" PRIu64
             " denied:%s; host costs told: %" PRIu64 ", call times told: %" PRIu64,
             jid, d.granted, d.deferred, denied.empty() ? " none" : denied.c_str(),
             job.stats().host_costs, job.stats().call_times);
}

// ---------------------------------------------------------------- decisions

Verdict::Kind Aggregator::decide(Job &job, Call &call, uint64_t mid)
{
    CallRequest req{job.jid(), mid,        job.window(),   call.total, call.coll,
                    call.op,   call.dtype, job.nmembers(), call.asked};
    // Blocks sent before the verdict must find their Segs: as many as the
    // members were told and the call has (a child agent sends its whole
    // window at once, it ignores `ahead`).
    req.min_window = job.children()
                         ? job.window()
                         : static_cast<uint32_t>(std::min<uint64_t>(
                               {job.ahead_for(mid), job.window(), std::max<uint64_t>(1, call.nblocks)}));
    ++call.asked;
    // Room for the per-slot SIDs first: nothing may throw once a lease is taken.
    call.next_sid.resize(job.window());
    call.told.assign(job.nmembers(), false);
    if (job.uplinked()) {
        // (and for a leaf's per-slot records of what went up: sized at the grant)
        call.up_pending.reserve(job.window());
        call.up_next.reserve(job.up_window());
    }
    // A job carries calls only once every member opened it (before, a
    // member may not even know the job): until then the call
    // waits, as one the scheduler deferred, for at most open_wait.
    // A leaf's job also waits for its parent's job to open.
    const bool up_opening = job.uplinked() && job.up_state() == Job::UpState::kOpening;
    Verdict v;
    if (draining_ && (!job.uplinked() || job.up_state() == Job::UpState::kOpen)) {
        // The operator drains the agent: nothing new starts (a leaf's
        // denial reaches the other leaves through the parent; a job whose
        // parent is lost or opening ends as below).
        v = Verdict::deny(INA_PROTO_ERR_DRAINING);
    } else if (job.member_gone()) {
        // Its part never comes. An ERROR, never a DENY (as for a lost
        // parent, below): in a tree, the gone member is a leaf whose ranks
        // lost their agent and finish the call with everybody, from results
        // the other leaves' ranks may hold.
        abort_call(job, mid, call, INA_PROTO_ERR_NOT_MEMBER, "a member of the job is gone",
                   kAbortTellParent | kAbortNeverDeny);
        return Verdict::Kind::kDeny;
    } else if (!job.complete() || up_opening) {
        if (call.asked == 1) {
            call.first_seen = Clock::now();
        }
        if (!job.waited_in_vain() && Clock::now() - call.first_seen < cfg_.open_wait) {
            v = Verdict::defer();
        } else {
            // Once one call waited in vain, the job's next calls do not wait
            // again (a member that could not reach this agent would cost
            // every call the whole wait); when it does open, calls go on.
            job.set_waited_in_vain();
            v = Verdict::deny(!job.complete() ? INA_PROTO_ERR_INCOMPLETE : INA_PROTO_ERR_UPSTREAM);
        }
    } else if (job.uplinked() && job.up_state() != Job::UpState::kOpen) {
        // The parent is lost (or refused the job): the tree cannot carry
        // this job again. An ERROR, never a DENY: members that can recover
        // settle it with every member of the communicator, which then
        // stops asking (and later resumes on a new job); members that
        // cannot fall back, as after a DENY (nobody was told GRANT).
        abort_call(job, mid, call, INA_PROTO_ERR_UPSTREAM, "the parent agent is lost",
                   kAbortNeverDeny);
        return Verdict::Kind::kDeny;
    } else if (cfg_.limits.job_segs != 0 && job.held_segs() + req.min_window > cfg_.limits.job_segs) {
        // The job's own calls in flight hold its share (--max-job-segs):
        // this one waits for one of them to end (their leases coming back
        // ask it again), like a call the scheduler put off.
        v = Verdict::defer();
    } else {
        req.tenant = job.tenant();
        if (cfg_.limits.job_segs != 0) {
            req.window = std::min(req.window, cfg_.limits.job_segs - job.held_segs());
        }
        v = scheduler_->decide(req);
    }
    if (v.kind == Verdict::Kind::kGrant &&
        (v.lease.size() < req.min_window || v.lease.size() > req.window)) {
        INA_ERROR("scheduler granted job %u mid %" PRIu64
                  " a lease of %zu Segs, not %u..%u: denied",
                  job.jid(), mid, v.lease.size(), req.min_window, req.window);
        scheduler_->on_call_done(job.jid(), mid, v.lease);
        v = Verdict::deny(INA_PROTO_ERR_NO_RESOURCES);
    }
    switch (v.kind) {
    case Verdict::Kind::kGrant:
        call.next_sid.resize(v.lease.size()); // shrinks: allocates nothing
        std::iota(call.next_sid.begin(), call.next_sid.end(), uint64_t{0});
        call.lease = std::move(v.lease);
        job.hold_segs(static_cast<uint32_t>(call.lease.size()));
        call.granted = true;
        call.deferred = false;
        ++granted_calls_;
        ++counters_.calls_granted;
        counters_.leased_segs += call.lease.size();
        ++job.decisions().granted;
        if (job.uplinked()) {
            // The members hear the GRANT once the parent granted too.
            call.up_pending.assign(call.lease.size(), 0);
            call.up_next.resize(job.up_window());
            std::iota(call.up_next.begin(), call.up_next.end(), uint64_t{0});
        }
        if (!job.children() || call.nready == job.nmembers()) {
            // (A job of child agents: once every one of them voted.)
            agreed(job, call, mid);
        }
        break;
    case Verdict::Kind::kDeny:
        deny(job, call, mid, v.status);
        break;
    case Verdict::Kind::kDefer:
        if (!call.deferred) {
            deferred_.emplace_back(job.jid(), mid);
            call.deferred = true;
            ++counters_.calls_deferred;
            ++job.decisions().deferred;
            INA_DEBUG("job %u mid %" PRIu64 " (%s) deferred", job.jid(), mid,
                      ina_proto_coll_name(call.coll));
        }
        break;
    }
    return v.kind;
}

void Aggregator::agreed(Job &job, Call &call, uint64_t mid)
{
    if (!job.uplinked()) {
        tell_grant(job, call, mid);
    } else if (!call.up_ready) {
        // This agent and every child below it hold their leases: the
        // parent decides for the whole tree.
        call.up_ready = true;
        uplink_->ready(job, mid, call);
    }
}

void Aggregator::tell_grant(Job &job, Call &call, uint64_t mid)
{
    call.grant_told = true;
    announce(job, call, mid, true, INA_PROTO_OK);
}

void Aggregator::deny(Job &job, Call &call, uint64_t mid, ina_proto_status_t st,
                      bool tell_parent)
{
    call.finished = true;
    call.deferred = false;
    call.granted = false; // (a lease it held went back in end_call)
    call.deny_status = st != INA_PROTO_OK ? st : INA_PROTO_ERR_NO_RESOURCES;
    ++counters_.calls_denied;
    ++counters_.denied_by[call.deny_status];
    ++job.decisions().denied[call.deny_status];
    INA_DEBUG("job %u mid %" PRIu64 " (%s) denied: %s", job.jid(), mid,
              ina_proto_coll_name(call.coll), ina_proto_status_name(call.deny_status));
    if (call.told.size() != job.nmembers()) {
        call.told.assign(job.nmembers(), false);
    }
    announce(job, call, mid, false, call.deny_status);
    if (tell_parent && job.uplinked() && job.up_state() == Job::UpState::kOpen) {
        uplink_->abort(job, mid, call.deny_status); // the other leaves deny it too
    }
}

void Aggregator::abort_call(Job &job, uint64_t mid, Call &call, ina_proto_status_t st,
                            const char *why, unsigned how)
{
    const bool tell_parent = (how & kAbortTellParent) != 0;
    if (!call.grant_told && (how & kAbortNeverDeny) == 0) {
        // Nobody (of any leaf) was told GRANT: everybody falls back alike.
        end_call(job.jid(), mid, call);
        deny(job, call, mid, st, tell_parent);
        return;
    }
    end_call(job.jid(), mid, call);
    ++counters_.calls_aborted;
    ++job.stats().calls_aborted;
    ina_proto_hdr_t e;
    ina_proto_init(&e, INA_PROTO_BLOCK);
    e.jid = job.jid();
    e.mid = mid;
    for (uint32_t r = 0; r < job.nmembers(); ++r) {
        if (Member *p = job.member(r)) {
            e.rank = r;
            sink_.error(*p, e, st, why, (how & kAbortInFlight) != 0);
        }
    }
    if (tell_parent && job.uplinked() && job.up_state() == Job::UpState::kOpen) {
        uplink_->abort(job, mid, st);
    }
}

uint32_t Aggregator::ahead_word(const Job &job) const
{
    return std::clamp<uint32_t>(scheduler_->ahead(job.jid(), job.window()), 1, job.window());
}

void Aggregator::tell_ahead(Job &job, Call &call, uint64_t mid)
{
    if (call.ahead != 0) {
        return; // told once, with the verdict
    }
    // A member that hears this before it starts mid + 1 may send that many
    // of its blocks before their verdict. If mid + 1 is already decided, its
    // lease was sized without this word: say no more than 1.
    const bool next_decided = job.find_call(mid + 1) != nullptr || job.is_retired(mid + 1);
    call.ahead = job.children() ? job.window() : next_decided ? 1 : ahead_word(job);
    job.tell_ahead(mid, call.ahead);
}

Decision Aggregator::decision(const Job &job, const Call &call, uint64_t mid, bool grant,
                              ina_proto_status_t st) const
{
    const uint32_t window = grant || call.granted ? static_cast<uint32_t>(call.lease.size())
                                                  : job.window();
    return Decision{job.jid(), mid, window, grant, st, call.ahead};
}

void Aggregator::announce(Job &job, Call &call, uint64_t mid, bool grant, ina_proto_status_t st)
{
    tell_ahead(job, call, mid);
    const Decision d = decision(job, call, mid, grant, st);
    for (uint32_t rank = 0; rank < job.nmembers(); ++rank) {
        if (Member *m = job.member(rank)) {
            sink_.decision(*m, rank, d);
            call.told[rank] = true;
        }
    }
}

void Aggregator::end_call(uint32_t jid, uint64_t mid, Call &call)
{
    call.up_wait.clear(); // a leaf's blocks waiting to go up
    // Kept blocks of a call decided in a round that a std::bad_alloc cut
    // short (reask) are still counted: they go too.
    drop_kept(call);
    if (call.granted) {
        if (!call.lease.empty()) {
            // (A job being freed is already out of its slot: nothing to count.)
            if (auto it = jobs_.find(jid); it != jobs_.end() && it->second != nullptr) {
                it->second->release_segs(static_cast<uint32_t>(call.lease.size()));
            }
            scheduler_->on_call_done(jid, mid, call.lease);
            call.lease.clear();
            lease_back_ = true;
            --granted_calls_;
        }
    } else if (call.deferred) {
        call.deferred = false;
        drop_kept(call);
        forget_deferred(jid, mid);
        std::vector<uint32_t> none;
        scheduler_->on_call_done(jid, mid, none);
    }
    call.finished = true;
}

void Aggregator::drop_kept(Call &call)
{
    counters_.denied_blocks += call.kept.size();
    release_kept(call.kept);
    kept_bytes_ -= call.kept_bytes;
    call.kept_bytes = 0;
    std::vector<KeptBlock>().swap(call.kept);
}

void Aggregator::release_kept(const std::vector<KeptBlock> &kept)
{
    for (const KeptBlock &b : kept) {
        const size_t cost = b.data.size() + sizeof(KeptBlock);
        b.from->kept_bytes_ -= std::min(cost, b.from->kept_bytes_);
    }
}

void Aggregator::forget_deferred(uint32_t jid, uint64_t mid)
{
    auto it = std::find(deferred_.begin(), deferred_.end(), std::make_pair(jid, mid));
    if (it != deferred_.end()) {
        deferred_.erase(it);
    }
}

void Aggregator::tick(Clock::time_point now)
{
    scheduler_->tick(now);
    reask();
}

void Aggregator::settle()
{
    if (lease_back_ && !reasking_) {
        reask();
    }
}

void Aggregator::reask()
{
    if (reasking_) {
        return;
    }
    struct Guard {
        bool &flag;
        ~Guard() { flag = false; }
    } guard{reasking_};
    reasking_ = true;
    do {
        lease_back_ = false;
        // Each call once per round, oldest first; a decided call leaves the
        // queue, a replay may complete calls and return leases (next round).
        std::deque<std::pair<uint32_t, uint64_t>> round(deferred_);
        for (const auto &key : round) {
            auto jit = jobs_.find(key.first);
            Call *call = jit == jobs_.end() ? nullptr : jit->second->find_call(key.second);
            if (call == nullptr) {
                forget_deferred(key.first, key.second);
                continue;
            }
            Job &job = *jit->second;
            // A call still queued but no longer deferred was decided in a
            // round that a std::bad_alloc cut short (from telling its
            // verdict): its kept blocks go the way of that verdict now.
            const Verdict::Kind k = call->deferred ? decide(job, *call, key.second)
                                    : call->granted && !call->finished ? Verdict::Kind::kGrant
                                                                       : Verdict::Kind::kDeny;
            if (k == Verdict::Kind::kDefer) {
                continue;
            }
            forget_deferred(key.first, key.second);
            std::vector<KeptBlock> kept;
            kept.swap(call->kept);
            release_kept(kept);
            kept_bytes_ -= call->kept_bytes;
            call->kept_bytes = 0;
            if (k == Verdict::Kind::kDeny) {
                counters_.denied_blocks += kept.size(); // every member was told
                continue;
            }
            // Granted: the blocks go through the path they would have taken
            // had the call been granted at once, in their arrival order.
            for (KeptBlock &b : kept) {
                apply(job, *call, *b.from, b.hdr, b.data.data(), nullptr);
            }
        }
    } while (lease_back_ && !deferred_.empty());
    lease_back_ = false;
}

// ---------------------------------------------------------------- members' messages

Job *Aggregator::member_job(Member &from, const ina_proto_hdr_t &h, const char *what)
{
    auto it = jobs_.find(h.jid);
    if (it == jobs_.end()) {
        reject(&from, h, INA_PROTO_ERR_NO_JOB, what);
        return nullptr;
    }
    Job &job = *it->second;
    if (!job.is_member(h.rank, &from)) {
        // A foreign (or forged) message must not touch the victim job.
        ++counters_.foreign;
        reject(&from, h, INA_PROTO_ERR_NOT_MEMBER, "sender is not this member");
        return nullptr;
    }
    // A BLOCK names the window its seg was computed in: the job's before
    // the verdict, the call's lease after (apply checks which).
    const bool window_ok = h.type == INA_PROTO_CALL_ABORT || h.type == INA_PROTO_HOST_COST ||
                           h.type == INA_PROTO_CALL_TIME ||
                           (h.type == INA_PROTO_BLOCK ? h.window >= 1 && h.window <= job.window()
                                                      : h.window == job.window());
    if (!window_ok) {
        reject(&from, h, INA_PROTO_ERR_MISMATCH, "window differs from the job's");
        return nullptr;
    }
    return &job;
}

Call &Aggregator::start_call(Job &job, const ina_proto_hdr_t &h)
{
    Call &c = job.add_call(h.mid);
    c.coll = h.coll;
    c.op = h.op;
    c.dtype = h.dtype;
    c.total = h.arg;
    // A member's first block of a call is its SID 0: a whole block's length
    // (BARRIER's is empty).
    c.nblocks = h.block_elems == 0 ? 1 : (h.arg + h.block_elems - 1) / h.block_elems;
    if (job.children()) {
        c.ready.assign(job.nmembers(), false);
    }
    return c;
}

// ---------------------------------------------------------------- block path

void Aggregator::block(Member &from, const ina_proto_hdr_t &h, const void *payload, BufRef *own)
{
    ++counters_.blocks_in;
    handle_block(from, h, payload, own);
    settle();
}

void Aggregator::handle_block(Member &from, const ina_proto_hdr_t &h, const void *payload,
                              BufRef *own)
{
    Job *jp = member_job(from, h, "block");
    if (jp == nullptr) {
        return;
    }
    Job &job = *jp;
    if (static_cast<size_t>(h.block_elems) * ina_proto_dtype_size(h.dtype) > pool_.seg_bytes()) {
        Call *call = job.find_call(h.mid);
        if (call != nullptr && call->granted) {
            refuse(job, *call, from, h, INA_PROTO_ERR_MALFORMED, "block larger than a Seg");
        } else {
            reject(&from, h, INA_PROTO_ERR_MALFORMED, "block larger than a Seg");
        }
        return;
    }
    job.note_mid(h.rank, h.mid);
    job.note_done(h.rank, h.mid, h.done);
    ++job.stats().blocks_in;
    job.stats().bytes_in += static_cast<uint64_t>(h.count) * ina_proto_dtype_size(h.dtype);

    Call *call = job.find_call(h.mid);
    if (call == nullptr) {
        // First block of this MID from any rank: decide once for every member.
        job.retire();
        if (job.is_retired(h.mid)) {
            ++counters_.denied_blocks; // late block of a call already forgotten
            return;
        }
        Call &c = start_call(job, h);
        decide(job, c, h.mid);
        call = &c;
    }
    if (call->deferred) {
        keep(job, *call, h.mid, from, h, payload);
        return;
    }
    apply(job, *call, from, h, payload, own);
}

void Aggregator::keep(Job &job, Call &call, uint64_t mid, Member &from, const ina_proto_hdr_t &h,
                      const void *payload)
{
    const size_t len = static_cast<size_t>(h.count) * ina_proto_dtype_size(h.dtype);
    const size_t cost = len + sizeof(KeptBlock);
    const bool member_full = from.kept_bytes_ + cost > cfg_.limits.member_keep_bytes;
    if (kept_bytes_ + cost > cfg_.keep_bytes || member_full) {
        // No room to wait any longer: decide now, the same for everybody.
        INA_DEBUG("job %u mid %" PRIu64 ": no room to keep the blocks of a deferred call%s",
                  job.jid(), mid, member_full ? " (--max-conn-keep-bytes)" : "");
        counters_.limit_refusals += member_full;
        ++counters_.denied_blocks; // this block
        call.deferred = false;
        drop_kept(call);
        forget_deferred(job.jid(), mid);
        std::vector<uint32_t> none;
        scheduler_->on_call_done(job.jid(), mid, none);
        deny(job, call, mid, member_full ? INA_PROTO_ERR_LIMIT : INA_PROTO_ERR_NO_RESOURCES);
        return;
    }
    KeptBlock b{&from, h, std::vector<std::byte>(len)};
    if (len > 0) {
        std::memcpy(b.data.data(), payload, len);
    }
    call.kept.push_back(std::move(b));
    call.kept_bytes += cost;
    kept_bytes_ += cost;
    from.kept_bytes_ += cost;
    ++counters_.kept_blocks;
}

void Aggregator::apply(Job &job, Call &call, Member &from, const ina_proto_hdr_t &h,
                       const void *payload, BufRef *own)
{
    if (!call.granted) {
        ++counters_.denied_blocks; // every member was told; drop silently
        if (h.rank < call.told.size() && !call.told[h.rank]) {
            // Except one that joined after the decision (a job opened by
            // key): it learns the verdict now, at its first block.
            call.told[h.rank] = true;
            sink_.decision(from, h.rank, decision(job, call, h.mid, false, call.deny_status));
        }
        return;
    }
    if (call.finished) {
        ++counters_.duplicate; // a block whose RESULT already went out
        return;
    }
    if (h.seg >= call.lease.size() || h.seg != h.sid % call.lease.size()) {
        // Sent beyond what `ahead` allowed before the verdict, or in another
        // lease than the GRANT's.
        refuse(job, call, from, h, INA_PROTO_ERR_MISMATCH, "block outside the call's lease");
        return;
    }
    if (h.sid < call.next_sid[h.seg]) {
        ++counters_.duplicate; // a block whose RESULT already went out
        return;
    }
    if (job.children() && !call.ready[h.rank]) {
        refuse(job, call, from, h, INA_PROTO_ERR_MISMATCH,
               "a child agent's block before its CALL_READY");
        return;
    }
    if (h.arg != call.total) {
        refuse(job, call, from, h, INA_PROTO_ERR_MISMATCH, "call size differs between members");
        return;
    }
    if (h.coll != call.coll || h.op != call.op || h.dtype != call.dtype) {
        // Checked per call, not only per Seg: the first block into a Seg
        // must not get to define it wrongly.
        refuse(job, call, from, h, INA_PROTO_ERR_MISMATCH, "coll/op/dtype differ from the call's");
        return;
    }
    uint32_t seg = call.lease[h.seg];
    if (cfg_.time_blocks && !pool_.busy(seg)) {
        seg_since_[seg] = Clock::now(); // its first contribution (if taken)
    }
    const bool want = (h.flags & INA_PROTO_F_WANT_RESULT) != 0;
    Block b{h.rank, h.sid,  h.coll,      h.op,  h.dtype,
            want,   h.offset, h.count, h.block_elems, h.arg, payload, own};
    // A leaf's members cover only their part of a BCAST/ALLGATHER block.
    switch (pool_.contribute(seg, job.topology(), b, !job.uplinked())) {
    case SegOutcome::kStored:
        return;
    case SegOutcome::kDuplicate:
        ++counters_.duplicate;
        INA_DEBUG("duplicate block jid %u rank %u sid %u", h.jid, h.rank, h.sid);
        return;
    case SegOutcome::kMismatch:
        refuse(job, call, from, h, INA_PROTO_ERR_MISMATCH,
               "coll/op/dtype/block_elems/size differ from the Seg's");
        return;
    case SegOutcome::kNotWhole:
        refuse(job, call, from, h, INA_PROTO_ERR_MISMATCH,
               "data does not cover the whole block");
        return;
    case SegOutcome::kOverlap:
        refuse(job, call, from, h, INA_PROTO_ERR_MISMATCH,
               "piece overlaps data already placed (second root or overlapping chunk)");
        return;
    case SegOutcome::kUncovered:
        refuse(job, call, from, h, INA_PROTO_ERR_MISMATCH,
               "last piece leaves part of the block empty");
        return;
    case SegOutcome::kBusy:
        refuse(job, call, from, h, INA_PROTO_ERR_SEG_BUSY, "Seg holds another SID");
        return;
    case SegOutcome::kTooBig:
        refuse(job, call, from, h, INA_PROTO_ERR_MALFORMED, "block larger than a Seg");
        return;
    case SegOutcome::kComplete:
        break;
    }
    // Complete: the Seg is free again at once; the result buffer travels
    // (to the members, or up to the parent: its RESULT comes back later).
    call.next_sid[h.seg] = uint64_t{h.sid} + call.lease.size();
    ++job.stats().blocks_done;
    if (cfg_.time_blocks) {
        block_times_.record(Clock::now() - seg_since_[seg]);
    }
    if (job.uplinked()) {
        send_up(job, call, h, seg);
        return;
    }
    // Every RESULT carries the call's lease and the word for the next call
    // (a member of one-member jobs hears no GRANT).
    ina_proto_hdr_t done = h;
    done.window = static_cast<uint16_t>(call.lease.size());
    done.ahead = static_cast<uint16_t>(call.ahead);
    done.done = static_cast<uint32_t>(job.certified());
    send_result(job, done, seg);
    // BARRIER's single block is empty (total 0): done >= total at once.
    call.done += h.block_elems;
    if (call.done >= call.total) {
        end_call(job.jid(), h.mid, call); // the call ended: its lease goes back
    }
}

void Aggregator::send_result(Job &job, const ina_proto_hdr_t &blk, uint32_t seg)
{
    const size_t len = static_cast<size_t>(blk.block_elems) * ina_proto_dtype_size(blk.dtype);
    // The Seg is free for the next SID from here on; the buffer travels with
    // one reference per payload send (an empty BARRIER block has none), and
    // ours goes when this function returns, whatever happens.
    const uint32_t buf = pool_.take_result(seg);
    const BufRef result = buf != kNoIndex ? BufRef(pool_.buffers(), buf) : BufRef();
    fan_out(job, blk, seg, result, len);
}

void Aggregator::fan_out(Job &job, const ina_proto_hdr_t &blk, uint32_t seg, const BufRef &result,
                         size_t len)
{
    // Every member contributed, so every member is joined: each gets exactly
    // one of the two.
    for (uint32_t rank = 0; rank < job.nmembers(); ++rank) {
        Member *m = job.member(rank);
        if (m == nullptr) {
            continue;
        }
        if (pool_.wants(seg, rank)) {
            sink_.result(*m, rank, blk, result.share(), len);
            ++job.stats().results_out;
            job.stats().bytes_out += len;
        } else {
            sink_.ack(*m, rank, blk);
            ++job.stats().acks_out;
        }
    }
}

} // namespace ina::agg
