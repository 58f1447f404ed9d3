/*
 * MPI_Allreduce through the aggregation agent, with a per-call fallback to
 * the collective ina replaced.
 *
 * Every fallback decision is taken identically on all ranks: it depends on
 * (count, datatype, op), which MPI requires to match, on the job state that
 * the members agreed on at setup, or on the agent's answer, which the
 * engine guarantees to be the same for every member (DENY / UNREACHABLE).
 */
#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include "coll_ina.h"

static int ina_allreduce_fallback(const void *sbuf, void *rbuf, int count,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  mca_coll_ina_module_t *m,
                                  mca_coll_ina_fallback_reason_t reason)
{
    mca_coll_ina_count_fallback(m, reason);
    INA_VERBOSE(10, "cid %d: allreduce of %d elements on the host (%s)", m->cid, count,
                mca_coll_ina_fallback_reason_name(reason));
    return m->previous_allreduce(sbuf, rbuf, count, dtype, op, m->comm,
                                 m->previous_allreduce_module);
}

/* coll_ina_required: an offloadable call that cannot reach the agent is an
 * error rather than a silent slowdown. */
static int ina_allreduce_required_error(mca_coll_ina_module_t *m, const char *why)
{
    opal_show_help("help-coll-ina.txt", "offload-required", true,
                   opal_process_info.nodename, m->rank, m->cid, why);
    return MPI_ERR_OTHER;
}

int mca_coll_ina_allreduce(const void *sbuf, void *rbuf, int count,
                           struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                           struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    const void *send = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
    int wire_dt, wire_op, rc;
    ina_cqe_t cqe = {.rc = INA_OK};
    (void) comm;

    if (count <= 0) {
        return MPI_SUCCESS; /* nothing to reduce, on every rank alike */
    }
    wire_dt = mca_coll_ina_dtype_to_wire(dtype);
    wire_op = mca_coll_ina_op_to_wire(op);
    if (wire_dt < 0 || wire_op < 0 || !ina_proto_op_valid((unsigned) wire_op, (unsigned) wire_dt) ||
        c->thread_multiple) {
        return ina_allreduce_fallback(sbuf, rbuf, count, dtype, op, m,
                                      MCA_COLL_INA_FB_UNSUPPORTED);
    }
    if ((size_t) count * ina_proto_dtype_size((unsigned) wire_dt) < c->min_bytes) {
        return ina_allreduce_fallback(sbuf, rbuf, count, dtype, op, m,
                                      MCA_COLL_INA_FB_THRESHOLD);
    }

    if (MCA_COLL_INA_JOB_NONE == m->job_state) {
        rc = mca_coll_ina_job_setup(m);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    if (MCA_COLL_INA_JOB_READY != m->job_state) {
        if (c->required) {
            return ina_allreduce_required_error(m, "no job at the agent for this communicator");
        }
        return ina_allreduce_fallback(sbuf, rbuf, count, dtype, op, m,
                                      MCA_COLL_INA_FB_UNREACHABLE);
    }

    rc = ina_job_allreduce(m->job, send, rbuf, (uint64_t) count, (unsigned) wire_dt,
                           (unsigned) wire_op, &cqe);
    switch (rc) {
    case INA_OK:
        ++m->offloaded_calls;
        return MPI_SUCCESS;
    case INA_DENIED:
        /* The scheduler's answer is the same for every member (SEEDS S4). */
        return ina_allreduce_fallback(sbuf, rbuf, count, dtype, op, m,
                                      MCA_COLL_INA_FB_DENIED);
    case INA_UNREACHABLE:
        if (c->required) {
            return ina_allreduce_required_error(m, "the agent is unreachable");
        }
        return ina_allreduce_fallback(sbuf, rbuf, count, dtype, op, m,
                                      MCA_COLL_INA_FB_UNREACHABLE);
    default:
        /* Lost mid-call or rejected: other ranks may already hold the result
         * (or not), so a host re-run could mix results. */
        opal_show_help("help-coll-ina.txt", "offload-failed", true,
                       opal_process_info.nodename, m->rank, m->cid,
                       (unsigned long long) cqe.mid, rc, ina_proto_status_name(cqe.status));
        return MPI_ERR_OTHER;
    }
}
