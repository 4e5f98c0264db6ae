// fctlab's driver for htsim (Broadcom/csg-htsim; uet-htsim for DCQCN and NSCC): runs a flow list
// with sizes, start times and dependencies over an explicit network of ports, with htsim's own
// TCP and DCTCP sources (TcpSrc, DCTCPSrc) and sink (TcpSink), its RDMA sources and sinks
// (RoceSrc/RoceSink, HPCCSrc/HPCCSink, DCQCNSrc/DCQCNSink), NDP (NdpSrc, NdpSink and one
// NdpPullPacer per receiving host), queues (Queue, ECNQueue; for lossless networks
// LosslessOutputQueue, LosslessInputQueue and the hosts' FairPriorityQueue; for NDP the
// trimming CompositeQueue and the hosts' FairPriorityQueue) and pipes (Pipe). EQDS
// (csg-htsim's EqdsSrc, EqdsSink, one EqdsPullPacer and one EqdsNIC per host) and NSCC
// (uet-htsim's UecSrc with NSCC and REPS, UecSink, one UecNIC per host) choose their paths by
// entropy values that the switches hash: they run on htsim's own fat-tree (FatTreeTopology,
// FatTreeSwitch with ECMP, CompositeQueue ports), built and wired as htsim's EQDS and UEC
// drivers build them (datacenter/main_eqds.cpp, main_uec.cpp), each of its ports named by the
// input's port id.
//
// The code bases differ; `fctlab peers build htsim` defines what the one it builds against has:
//   FCTLAB_HTSIM_DCQCN                 DCQCNSrc and DCQCNSink (dcqcn.h)
//   FCTLAB_HTSIM_LOSSLESS_STATIC_ECN   LosslessOutputQueue marks by its statics _ecn_enabled
//                                      and _K (one threshold for every port), not by
//                                      constructor arguments
//   FCTLAB_HTSIM_ROCE_PACKET_SEQNO     RoceSrc's sequence numbers, _highest_sent and
//                                      _last_acked count packets, and a flow of F bytes is done
//                                      when ackno x _mss >= F
//   FCTLAB_HTSIM_FATTREE               datacenter/fat_tree_topology.h (FatTreeTopology,
//                                      FatTreeSwitch), compiled in with the driver
//   FCTLAB_HTSIM_FATTREE_CFG           FatTreeTopology is built from a FatTreeTopologyCfg
//                                      (uet-htsim)
//   FCTLAB_HTSIM_EQDS                  csg-htsim's EQDS: EqdsSrc(logger, eventlist, nic),
//                                      EqdsNIC(eventlist, rate), EqdsPullPacer (eqds.h)
//   FCTLAB_HTSIM_UEC                   uet-htsim's UecSrc, UecSink, UecNIC, UecMpReps (uec.h)
//   FCTLAB_HTSIM_COMPOSITE_TRIM_SIZE   CompositeQueue's constructor takes the trimmed size and
//                                      whether to drop instead (uet-htsim): 64 B, trimming
//
// htsim's drivers for TCP (datacenter/main_tcp.cpp) and DCTCP
// (datacenter/old_tests/main_dctcp_permutation.cpp) build their own fat-tree and run a random
// permutation of long-lived flows; none reads a flow list. This file only wires htsim's classes
// together as the input says: it sets no protocol behaviour of its own. It is compiled against
// the library of an htsim checkout by `fctlab peers build htsim`.
//
//   fctlab_htsim INPUT        (results on stdout)
//
// INPUT, one item per line ('#' starts a comment):
//   packet BYTES                  the size of every data packet (Packet::set_packet_size)
//   seed S                        seeds htsim's random() and rand() (srandom, srand), which
//                                 NdpSrc's and NdpSink's path shuffles and CompositeQueue's
//                                 choice of the packet to trim draw from
//   scan PS                       period of the retransmission-timer scan (TcpRtxTimerScanner)
//   stop PS                       end of the run
//   tcp CWND SSTHRESH RTO MAXCWND initial window, slow-start threshold (bytes), initial RTO
//                                 (ps), largest window (bytes)
//   port ID RATE_BPS DELAY_PS MAXSIZE K [KIND INGRESS]
//                                 a queue (bytes; K = -1: no marking, else marking at K bytes)
//                                 and the pipe behind it. KIND: queue (the default: Queue, or
//                                 ECNQueue with K), lossless (LosslessOutputQueue, ECN with K)
//                                 host (FairPriorityQueue, a host's NIC on a lossless
//                                 network or for NDP), sched (FairScheduler, a host's NIC for
//                                 Swift) or composite (CompositeQueue: MAXSIZE bytes of data,
//                                 the packet in transmission included, and twice that of
//                                 headers; a switch's port for NDP). INGRESS 1: a LosslessInputQueue behind the pipe,
//                                 counting what the switch at the far end holds from this
//                                 port, its PAUSE/RESUME frames back to this port after the
//                                 pipe's delay
//   pfc HIGH LOW                  LosslessInputQueue's thresholds (bytes): a pause when the
//                                 bytes held pass HIGH, a resume when they fall below LOW
//   hpcc T_PS ETA MAX_STAGE       HPCCSrc's base RTT, target utilization, additive stages
//   dcqcn G PERIOD_PS F B CNP_PS  DCQCNSrc's statics _g, _cc_update_period (its one period of
//                                 the alpha and the rate timers), _F and _B (compared with the
//                                 sequence numbers sent, which count packets), and
//                                 DCQCNSink::_cnp_interval
//   swift AI BETA MAX_MDF BASE_PS HOP_SCALE FS_RANGE FS_MIN FS_MAX MIN_CWND MAX_CWND RETX_RESET
//         IW SCAN_PS              SwiftSrc's settings: its public members (_ai, _beta,
//                                 _max_mdf, _base_delay, _h = BASE / HOP_SCALE, _fs_range =
//                                 FS_RANGE x BASE, _fs_min_cwnd, _fs_max_cwnd and _fs_alpha,
//                                 _fs_beta from them as its constructor computes them,
//                                 _min_cwnd bytes, _max_cwnd = MAX_CWND packets,
//                                 _rtx_reset_threshold), the first window IW (bytes,
//                                 set_cwnd) and the SwiftRtxTimerScanner's period
//   ndp IW PULL_RATE              NdpSrc's first window (packets: setCwnd(IW x packet)) and
//                                 the pull pacers' fraction of their host's link rate
//   fattree NODES RATE_BPS LATENCY_PS QUEUE_BYTES
//                                 htsim's 3-tier FatTreeTopology of NODES hosts (K from
//                                 NODES), every link RATE_BPS with a pipe of LATENCY_PS, every
//                                 switch port a CompositeQueue of QUEUE_BYTES (data, the
//                                 packet in transmission included), the hosts'
//                                 FairPriorityQueue, FatTreeSwitch with ECMP (as main_eqds.cpp
//                                 and main_uec.cpp build it); for eqds and nscc flows, instead
//                                 of port lines
//   ftport ID TIER A B            the input's port ID is the fat-tree's queue TIER[A][B][0],
//                                 TIER one of ns_nlp (host A to ToR B), nlp_ns, nlp_nup,
//                                 nup_nlp, nup_nc, nc_nup (FatTreeTopology's arrays): its
//                                 counts are reported as port ID
//   eqds CWND PATHS RTO_PS PULL_RATE
//                                 EqdsSrc::setCwnd(CWND packets x packet) (main_eqds.cpp
//                                 -cwnd), EqdsSrc::_path_entropy_size (-paths), EqdsSrc::_min_rto;
//                                 one EqdsPullPacer (PULL_RATE of the link rate: main_eqds.cpp
//                                 gives 0.99; built before any EqdsSrc as main_eqds.cpp builds
//                                 it) and one EqdsNIC per host
//   uec RTT_PS TARGET_PS PATHS SACK RTO_PS NACK_RTT ECN_MIN ECN_MAX
//                                 UecSrc::initNsccParams(RTT, rate, TARGET, qa_gate -1,
//                                 trimming), each source's initNscc(0, RTT) (a window of 1.5
//                                 BDPs), UecMpReps over PATHS entropy values,
//                                 UecSink::_bytes_unacked_threshold = SACK,
//                                 UecSrc::_min_rto, UecSrc::update_base_rtt_on_nack =
//                                 NACK_RTT, and every switch port's CompositeQueue marking
//                                 between ECN_MIN and ECN_MAX bytes (set_ecn_thresholds; equal:
//                                 a step); sender-based NSCC only (main_uec.cpp
//                                 -sender_cc_only -load_balancing_algo reps)
//   group ID MEMBERS              a group: its flows' number
//   flow ID KIND PKTS START_PS GROUP AFTER FWD... / REV...
//                                 KIND tcp|dctcp|roce|hpcc|dcqcn|swift|ndp; PKTS data packets (-1: long-lived); GROUP its
//                                 group or -1; AFTER the group it waits for or -1 (START_PS is
//                                 then the delay after that group completes); FWD and REV the
//                                 port ids of the data and the ACK path (none for ndp);
//                                 for eqds and nscc PKTS is the flow's bytes, FWD the source's
//                                 host number and REV the destination's in the fat-tree
//   path ID fwd|rev PORTS...      an NDP flow's data path (fwd) or ACK path (rev), one line
//                                 each: the source sprays over its data paths and the sink
//                                 over its ACK paths, each in a shuffled order reshuffled
//                                 after every pass (SCATTER_PERMUTE); the first port of an
//                                 ACK path is the receiving host's NIC, whose pull pacer the
//                                 sink shares with the host's other sinks
//
// Output lines:
//   S ID T                        flow ID started at T seconds
//   F ID T RETX TIMEOUTS SENT     flow ID completed at T (all data acknowledged; TIMEOUTS -1:
//                                 not counted, Swift's subflows keep theirs to themselves)
//   A ID ACKED RETX TIMEOUTS SENT at the end, every flow: packets acknowledged, data packets
//                                 resent, timeouts (-1: not counted), data packets sent
//   L ID PKTS BYTES DROPS MARKS QINT PAUSES TRIMS   at the end, every port: departures,
//                                 dropped packets, CE-marked data departures, integral of
//                                 waiting packets (pkt s), PAUSE frames that reached it,
//                                 packets trimmed to their header
//   D T PORT FLOW N               packet N (data from 0, the SYN -1) of FLOW dropped at PORT
//                                 at T (ACKs are not listed)
//   P T PORT 1|0                  a PAUSE (1) or RESUME (0) reached PORT at T and took effect
//   T END                         the time the run ended (seconds)
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "callback_pipe.h"
#include "compositequeue.h"
#include "config.h"
#include "dctcp.h"
#ifdef FCTLAB_HTSIM_FATTREE
#include "fat_tree_switch.h"
#include "fat_tree_topology.h"
#endif
#ifdef FCTLAB_HTSIM_EQDS
#include "eqds.h"
#endif
#ifdef FCTLAB_HTSIM_UEC
#include <memory>
#include "uec.h"
#include "uec_mp.h"
#endif
#include "ecn.h"
#include "ecnqueue.h"
#include "eth_pause_packet.h"
#include "eventlist.h"
#include "hpcc.h"
#include "loggertypes.h"
#include "ndp.h"
#include "ndppacket.h"
#include "network.h"
#include "pipe.h"
#include "queue.h"
#include "queue_lossless_input.h"
#include "queue_lossless_output.h"
#include "roce.h"
#ifdef FCTLAB_HTSIM_DCQCN
#include "cnppacket.h"
#include "dcqcn.h"
#endif
#include "route.h"
#include "swift.h"
#include "swift_scheduler.h"
#include "tcp.h"
#include "tcppacket.h"

using namespace std;

static EventList eventlist;
static map<flowid_t, int> flow_of;  // htsim's packet flow id -> the input's flow id

static bool is_data(packet_type t) {
#ifdef FCTLAB_HTSIM_EQDS
    if (t == EQDSDATA) return true;
#endif
#ifdef FCTLAB_HTSIM_UEC
    if (t == UECDATA) return true;
#endif
    return t == TCP || t == ROCE || t == HPCC || t == SWIFT || t == NDP;
}

// Between a LosslessInputQueue and the port it pauses: reports each PAUSE or RESUME as it
// reaches the port (after the pipe's delay, as htsim's fat-tree sends them) and hands it on.
struct PauseTap : public PacketSink {
    int id = 0;
    PacketSink* port = nullptr;
    uint64_t pauses = 0;
    string name = "pausetap";
    void receivePacket(Packet& pkt) override {
        EthPausePacket& p = (EthPausePacket&)pkt;
        bool pause = p.sleepTime() > 0;
        if (pause) pauses++;
        printf("P %.12g %d %d\n", timeAsSec(EventList::now()), id, pause ? 1 : 0);
        port->receivePacket(pkt);
    }
    const string& nodename() override { return name; }
};

struct PortCount : public QueueLogger {
    int id = 0;
    uint64_t pkts = 0, bytes = 0, drops = 0, marks = 0, trims = 0;
    int64_t inq = 0;
    double qint = 0;
    simtime_picosec last = 0;
    void advance() {
        simtime_picosec now = EventList::now();
        int64_t waiting = inq > 1 ? inq - 1 : 0;  // the packet in service is not waiting
        qint += (double)waiting * timeAsSec(now - last);
        last = now;
    }
    void logQueue(BaseQueue& q, QueueEvent ev, Packet& pkt) override {
        if (ev == PKT_ENQUEUE) {
            advance();
            inq++;
        } else if (ev == PKT_SERVICE) {
            advance();
            inq--;
            pkts++;
            bytes += pkt.size();
            if (is_data(pkt.type()) && (pkt.flags() & ECN_CE)) marks++;
        } else if (ev == PKT_UNQUEUE) {
            // CompositeQueue takes its last data packet out to trim it (its header is
            // enqueued again, or dropped)
            advance();
            inq--;
        } else if (ev == PKT_TRIM) {
            trims++;
        } else if (ev == PKT_DROP) {
            drops++;
            if (pkt.type() == TCP) {
                TcpPacket& t = (TcpPacket&)pkt;
                // the SYN holds sequence number 1 (listed as packet -1); data packets start at 2,
                // a packet's worth each
                long long n = t.seqno() >= 2 ? (long long)((t.seqno() - 2) / Packet::data_packet_size()) : -1;
                printf("D %.12g %d %d %lld\n", timeAsSec(EventList::now()), id, flow_of[pkt.flow_id()], n);
            }
        }
    }
};

struct Flow;
static void flow_finished(Flow* f);

struct Flow {
    int id = 0;
    string kind;
    int64_t pkts = -1;
    simtime_picosec start = 0;
    int group = -1, after = -1;
    vector<int> fwd, rev;
    TcpSrc* src = nullptr;
    TcpSink* sink = nullptr;
    RoceSrc* roce = nullptr;
    HPCCSrc* hpcc = nullptr;
    SwiftSrc* swift = nullptr;
    uint64_t swift_pkts = 0, swift_acked = 0;  // Swift: data packets its NIC sent, bytes acknowledged
    NdpSrc* ndp = nullptr;
    NdpSink* ndp_sink = nullptr;
#ifdef FCTLAB_HTSIM_EQDS
    EqdsSrc* eqds = nullptr;
    EqdsSink* eqds_sink = nullptr;
#endif
#ifdef FCTLAB_HTSIM_UEC
    UecSrc* uec = nullptr;
    UecSink* uec_sink = nullptr;
#endif
    // EQDS and NSCC: the data packets sent, resent, and the cumulative ACK (PSNs)
    bool fattree() const {
#ifdef FCTLAB_HTSIM_EQDS
        if (eqds) return true;
#endif
#ifdef FCTLAB_HTSIM_UEC
        if (uec) return true;
#endif
        return false;
    }
    uint64_t ft_sent() const {
#ifdef FCTLAB_HTSIM_EQDS
        if (eqds) return (uint64_t)eqds->_new_packets_sent + eqds->_rtx_packets_sent;
#endif
#ifdef FCTLAB_HTSIM_UEC
        if (uec) return (uint64_t)uec->stats().new_pkts_sent + uec->stats().rtx_pkts_sent;
#endif
        return 0;
    }
    uint64_t ft_resent() const {
#ifdef FCTLAB_HTSIM_EQDS
        if (eqds) return eqds->_rtx_packets_sent;
#endif
#ifdef FCTLAB_HTSIM_UEC
        if (uec) return uec->stats().rtx_pkts_sent;
#endif
        return 0;
    }
    uint64_t ft_acked() const {
#ifdef FCTLAB_HTSIM_EQDS
        if (eqds_sink) return eqds_sink->cumulative_ack();
#endif
#ifdef FCTLAB_HTSIM_UEC
        if (uec_sink) return uec_sink->cumulative_ack();
#endif
        return 0;
    }
    vector<vector<int>> fwd_paths, rev_paths;  // NDP: every data path and every ACK path
    Route *out = nullptr, *back = nullptr;
    PacketSink* sink_any = nullptr;
    bool started = false, done = false;
    // RoceSrc's sequence numbers count packets (FCTLAB_HTSIM_ROCE_PACKET_SEQNO), not bytes
    bool packet_seqno = false;
    uint64_t timeouts = 0, max_sent = 0;
    bool rdma() const { return roce || hpcc || swift; }
    // a data packet's span of sequence numbers
    uint64_t unit() const { return packet_seqno ? 1 : mss(); }
    // the source's counters: data bytes per packet, packets sent, bytes acknowledged
    uint64_t mss() const {
        if (fattree()) return Packet::data_packet_size() - 64;
        if (ndp) return ndp->_mss;
        return swift ? swift->_mss : roce ? roce->_mss : hpcc ? hpcc->_mss : src->_mss;
    }
    uint64_t sent() const {
        if (fattree()) return ft_sent();
        if (ndp) return ndp->_packets_sent;
        if (swift) return swift_pkts;
        return roce ? roce->_packets_sent : hpcc ? hpcc->_packets_sent : src->_packets_sent / src->_mss;
    }
    uint64_t acked() const {
        // NdpSrc's _last_acked is the cumulative ACK, the last byte received in order (from 1)
        if (fattree()) return ft_acked();
        if (ndp) return ndp->_last_acked / ndp->_mss;
        if (swift) return swift_acked / swift->_mss;
        if (roce) return roce->_last_acked / unit();
        if (hpcc) return hpcc->_last_acked / hpcc->_mss;
        return src->_last_acked > 1 ? (src->_last_acked - 1) / src->_mss : 0;
    }
};

// htsim's source with the bookkeeping the results need: start, completion, timeouts and the
// highest sequence number ever sent (a timeout sends from the last ACK again).
template <class Base>
class Tracked : public Base {
public:
    Flow* f;
    Tracked(Flow* flow) : Base(nullptr, nullptr, eventlist), f(flow) {}
    void note() {
        if (this->_highest_sent > f->max_sent) f->max_sent = this->_highest_sent;
    }
    void receivePacket(Packet& pkt) override {
        Base::receivePacket(pkt);
        note();
        uint64_t mss = this->_mss;
        if (!f->done && f->pkts >= 0 && this->_last_acked >= (uint64_t)f->pkts * mss + 1) flow_finished(f);
    }
    void doNextEvent() override {
        if (this->_rtx_timeout_pending) {
            f->timeouts++;
        } else if (!f->started) {
            f->started = true;
            printf("S %d %.12g\n", f->id, timeAsSec(EventList::now()));
        }
        Base::doNextEvent();
        note();
    }
};

// htsim's RDMA sources (RoceSrc, DCQCNSrc, HPCCSrc) with the same bookkeeping: their
// sequence numbers count data bytes from 1 (csg-htsim) or packets from 1 (uet-htsim's RoceSrc),
// and the cumulative ACK is the last one received in order.
template <class Base>
class TrackedRdma : public Base {
public:
    Flow* f;
    TrackedRdma(Flow* flow, linkspeed_bps rate) : Base(nullptr, nullptr, eventlist, rate), f(flow) {}
    void note() {
        if (this->_highest_sent > f->max_sent) f->max_sent = this->_highest_sent;
    }
    void receivePacket(Packet& pkt) override {
        Base::receivePacket(pkt);
        note();
        if (!f->done && f->pkts >= 0 && this->_last_acked >= (uint64_t)f->pkts * f->unit()) flow_finished(f);
    }
    void doNextEvent() override {
        Base::doNextEvent();
        note();
    }
};

// Starts an RDMA flow at its time: htsim's RoceSrc::connect and HPCCSrc::connect start the
// flow at once whatever start time they are given (the call that would schedule it is
// commented out in roce.cpp and hpcc.cpp), so the driver connects them with TRIGGER_START and
// calls their activate() (TriggerTarget) at the start time.
struct Starter : public EventSource {
    Flow* f;
    Starter(Flow* flow) : EventSource(::eventlist, "starter"), f(flow) {}
    void doNextEvent() override {
        f->started = true;
        printf("S %d %.12g\n", f->id, timeAsSec(EventList::now()));
        if (f->roce) f->roce->activate();
        if (f->hpcc) f->hpcc->activate();
#ifdef FCTLAB_HTSIM_UEC
        if (f->uec) f->uec->activate();
#endif
    }
};

static vector<Flow*> flows;
static map<int, Flow*> by_id;
static map<int, int> group_left;
static map<int, vector<Flow*>> waiters;
static int64_t finite_left = 0;
static set<int64_t> lossless_k;  // the ECN thresholds of the lossless ports
static bool dcqcn_set = false;
static bool any_long = false;

// Behind a Swift flow's first pipe (its packets have left the host's scheduler): counts its
// data packets sent and the highest byte sent, and hands each packet on.
struct DataTap : public PacketSink {
    Flow* f;
    string name = "datatap";
    DataTap(Flow* flow) : f(flow) {}
    void receivePacket(Packet& pkt) override {
        if (pkt.type() == SWIFT) {
            f->swift_pkts++;
            // a packet's sequence number is its first byte
            uint64_t last = ((SwiftPacket&)pkt).seqno() + pkt.size() - 1;
            if (last > f->max_sent) f->max_sent = last;
        }
        pkt.sendOn();
    }
    const string& nodename() override { return name; }
};

// SwiftSrc reporting its start (its doNextEvent starts the flow at the time connect() gave it).
class TrackedSwift : public SwiftSrc {
public:
    Flow* f;
    TrackedSwift(Flow* flow, SwiftRtxTimerScanner& scanner) : SwiftSrc(scanner, nullptr, nullptr, ::eventlist), f(flow) {}
    void doNextEvent() override {
        if (!f->started) {
            f->started = true;
            printf("S %d %.12g\n", f->id, timeAsSec(EventList::now()));
        }
        SwiftSrc::doNextEvent();
    }
};

// NdpSrc reporting its start and its completion. It is done, as htsim's own driver reports it
// (NdpSrc::processAck), at the first ACK whose cumulative ACK covers the flow; its sequence
// numbers count bytes from 1, a full packet each.
class TrackedNdp : public NdpSrc {
public:
    Flow* f;
    TrackedNdp(Flow* flow) : NdpSrc(nullptr, nullptr, ::eventlist), f(flow) {}
    void doNextEvent() override {
        if (!f->started) {
            f->started = true;
            printf("S %d %.12g\n", f->id, timeAsSec(EventList::now()));
        }
        NdpSrc::doNextEvent();
    }
    void receivePacket(Packet& pkt) override {
        bool ack = pkt.type() == NDPACK;
        uint64_t cum = ack ? ((NdpAck&)pkt).cumulative_ack() : 0;  // read before NdpSrc frees it
        NdpSrc::receivePacket(pkt);
        if (ack && !f->done && f->pkts >= 0 && cum >= (uint64_t)f->pkts * _mss) flow_finished(f);
    }
};

// One NdpPullPacer per receiving host, by the port id of its NIC (main_ndp.cpp builds one per
// host and gives it to every sink of the host).
static map<int, NdpPullPacer*> pacers;
static uint64_t ndp_iw = 0;
static double ndp_pull_rate = 0;

// A port of htsim's fat-tree, named by the input's port id.
struct FtPort {
    int id = 0;
    string tier;
    int a = 0, b = 0;
};
static vector<FtPort> ftports;
static simtime_picosec ft_latency = 0;
static int64_t ft_queue = 0;

// Fires when a source activates its end trigger: EqdsSrc and UecSrc do, once, in
// checkFinished, when the cumulative ACK (less the RTS packets) covers the flow
// (eqds.cpp:458-480, uec.cpp:812-866), where htsim's drivers print "finished at".
struct DoneTrigger : public Trigger {
    Flow* f;
    DoneTrigger(Flow* flow) : Trigger(::eventlist, 0), f(flow) {}
    void activate() override {
        if (!f->done) flow_finished(f);
    }
};

#ifdef FCTLAB_HTSIM_FATTREE
// htsim's fat-tree (EQDS, NSCC) and its settings.
static FatTreeTopology* fattree = nullptr;
static uint32_t ft_nodes = 0;
static linkspeed_bps ft_rate = 0;
#endif

// A flow-event logger that keeps nothing: EqdsSrc's constructor leaves its _flow_logger unset
// and main_eqds.cpp always gives it one (logFlowEvents), so the driver gives it this.
struct NoFlowEvents : public FlowEventLogger {
    void logEvent(PacketFlow&, Logged&, FlowEvent, mem_b, uint64_t) override {}
};
static NoFlowEvents no_flow_events;

#ifdef FCTLAB_HTSIM_EQDS
// EqdsSrc reporting its start; every later call of its doNextEvent is its retransmission
// timer's (EqdsSrc schedules itself for its start and its RTO only, eqds.cpp:314, 776).
class TrackedEqds : public EqdsSrc {
public:
    Flow* f;
    TrackedEqds(Flow* flow, EqdsNIC& nic) : EqdsSrc(nullptr, ::eventlist, nic), f(flow) {}
    void doNextEvent() override {
        if (!f->started) {
            f->started = true;
            printf("S %d %.12g\n", f->id, timeAsSec(EventList::now()));
        } else {
            f->timeouts++;
        }
        EqdsSrc::doNextEvent();
    }
};
static uint32_t eqds_cwnd = 0, eqds_paths = 0;
static double eqds_pull_rate = 0.99;
static simtime_picosec eqds_rto = 0;
static vector<EqdsPullPacer*> eqds_pacers;
static vector<EqdsNIC*> eqds_nics;
#endif

#ifdef FCTLAB_HTSIM_UEC
// UecSrc, started by activate() at its time (the driver's Starter: connectPort takes whole
// microseconds); each call of its doNextEvent is then its retransmission timer's (SLEEK's
// probes are off, uec.cpp:1627-1650).
class TrackedUec : public UecSrc {
public:
    Flow* f;
    TrackedUec(Flow* flow, UecNIC& nic, uint16_t paths)
        : UecSrc(nullptr, ::eventlist, make_unique<UecMpReps>(paths, false, true), nic, 1), f(flow) {}
    void doNextEvent() override {
        f->timeouts++;
        UecSrc::doNextEvent();
    }
};
static bool uec_set = false;
static simtime_picosec uec_rtt = 0, uec_target = 0, uec_rto = 0;
static uint32_t uec_paths = 0;
static mem_b uec_sack = 0, uec_ecn_min = 0, uec_ecn_max = 0;
static int uec_nack_rtt = 1;
static vector<UecNIC*> uec_nics;
#endif

// The last element of a Swift flow's ACK route before its source (SwiftSubflowSink appends
// the source): reads each ACK's cumulative data acknowledgement and hands the ACK on.
struct AckTap : public PacketSink {
    Flow* f;
    string name = "acktap";
    AckTap(Flow* flow) : f(flow) {}
    void receivePacket(Packet& pkt) override {
        if (pkt.type() == SWIFTACK) {
            uint64_t ds = ((SwiftAck&)pkt).ds_ackno();
            if (ds > f->swift_acked) f->swift_acked = ds;
            if (!f->done && f->pkts >= 0 && ds >= (uint64_t)f->pkts * f->swift->_mss) flow_finished(f);
        }
        pkt.sendOn();
    }
    const string& nodename() override { return name; }
};

struct SwiftSettings {
    double ai = 1, beta = 0.8, max_mdf = 0.5, hop_scale = 6.55, fs_range = 5, fs_min = 0.1, fs_max = 100,
           max_cwnd = 1000;
    simtime_picosec base = 0, scan = 0;
    uint32_t min_cwnd = 10, retx_reset = 5;
    uint64_t iw = 0;
};
static SwiftSettings swift_cfg;
static SwiftRtxTimerScanner* swift_scanner = nullptr;

static uint64_t resent(Flow* f) {
    if (f->fattree()) return f->ft_resent();
    if (f->ndp) return f->ndp->_rtx_packets_sent;
    uint64_t mss = f->mss();
    uint64_t sent = f->sent();
    uint64_t distinct = f->rdma() ? f->max_sent / f->unit() : f->max_sent > 1 ? (f->max_sent - 1) / mss : 0;
    return sent > distinct ? sent - distinct : 0;
}

// the timeouts of a flow; -1: not counted (a Swift subflow keeps its timer to itself)
static long long timeouts(Flow* f) { return f->swift ? -1 : (long long)f->timeouts; }

// A route of htsim's queues and pipes along `ports` (NDP: the source or sink adds its peer).
static map<int, BaseQueue*> queues;
static map<int, Pipe*> pipes;
static Route* bare_route(const vector<int>& ports) {
    Route* r = new Route();
    for (int p : ports) {
        r->push_back(queues[p]);
        r->push_back(pipes[p]);
    }
    return r;
}

static void start(Flow* f, simtime_picosec at) {
#ifdef FCTLAB_HTSIM_EQDS
    if (f->eqds) {
        // as main_eqds.cpp: the source's route to its ToR, the sink's to its own
        f->eqds->connect(*f->out, *f->back, *f->eqds_sink, at);
        return;
    }
#endif
#ifdef FCTLAB_HTSIM_UEC
    if (f->uec) {
        eventlist.sourceIsPending(*new Starter(f), at);
        return;
    }
#endif
    if (f->ndp) {
        // as main_ndp.cpp: connect, then the paths (set_paths copies them with the peer at the end)
        f->ndp->connect(nullptr, nullptr, *f->ndp_sink, at);
        vector<const Route*> out, back;
        for (auto& ports : f->fwd_paths) out.push_back(bare_route(ports));
        for (auto& ports : f->rev_paths) back.push_back(bare_route(ports));
        f->ndp->set_paths(&out);
        f->ndp_sink->set_paths(&back);
        return;
    }
    if (f->swift) {
        // the first window is a static of SwiftSubflowSrc, read when connect() makes the subflow
        f->swift->set_cwnd((uint32_t)swift_cfg.iw);
        f->swift->connect(*f->out, *f->back, *(SwiftSink*)f->sink_any, at);
        return;
    }
    if (f->rdma()) {
        eventlist.sourceIsPending(*new Starter(f), at);
        return;
    }
    f->src->connect(*f->out, *f->back, *f->sink, at);
    flow_of[f->src->getFlowId()] = f->id;
}

static void flow_finished(Flow* f) {
    f->done = true;
    printf("F %d %.12g %llu %lld %llu\n", f->id, timeAsSec(EventList::now()), (unsigned long long)resent(f),
           timeouts(f), (unsigned long long)f->sent());
    finite_left--;
    if (f->group >= 0 && --group_left[f->group] == 0) {
        for (Flow* w : waiters[f->group]) start(w, EventList::now() + w->start);
    }
}

static void fail(const string& msg) {
    cerr << "fctlab_htsim: " << msg << endl;
    exit(2);
}

#ifdef FCTLAB_HTSIM_FATTREE
static uint32_t tor_of(uint32_t host) {
#ifdef FCTLAB_HTSIM_FATTREE_CFG
    return fattree->cfg().HOST_POD_SWITCH(host);
#else
    return fattree->HOST_POD_SWITCH(host);
#endif
}

// htsim's fat-tree as main_eqds.cpp and main_uec.cpp build it (ECMP at the switches, trimming
// CompositeQueue ports, FairPriorityQueue at the hosts), the input's ports named on it, and,
// for EQDS, one EqdsPullPacer and one EqdsNIC per host; for NSCC, UecSrc's statics and one
// UecNIC per host.
static void build_fattree(map<int, PortCount*>& counts, vector<int>& port_ids) {
    FatTreeSwitch::set_strategy(FatTreeSwitch::ECMP);
    FatTreeSwitch::_ar_sticky = FatTreeSwitch::PER_PACKET;
    FatTreeSwitch::_sticky_delta = timeFromUs((double)10);
    FatTreeSwitch::_ecn_threshold_fraction = 0.5;
#ifdef FCTLAB_HTSIM_FATTREE_CFG
    FatTreeSwitch::_disable_trim = false;
    FatTreeSwitch::_trim_size = 64;
    FatTreeTopologyCfg* cfg = new FatTreeTopologyCfg(3, ft_nodes, ft_rate, ft_queue, ft_latency, 0, COMPOSITE, FAIR_PRIO);
    cfg->set_queue_sizes(ft_queue);
#ifdef FCTLAB_HTSIM_UEC
    if (uec_set) {
        if (uec_ecn_min > uec_ecn_max || uec_ecn_max > ft_queue) fail("uec: ECN thresholds outside the queue");
        // every switch port marks, the ToRs' ports toward hosts too (main_uec.cpp: !receiver_driven)
        cfg->set_ecn_parameters(true, true, uec_ecn_min, uec_ecn_max);
    }
#endif
    fattree = new FatTreeTopology(cfg, nullptr, &eventlist, nullptr);
#else
    FatTreeTopology::set_tiers(3);
    fattree = new FatTreeTopology(ft_nodes, ft_rate, ft_queue, nullptr, &eventlist, nullptr, COMPOSITE, ft_latency, 0,
                                  FAIR_PRIO);
#endif
#ifdef FCTLAB_HTSIM_FATTREE_CFG
    uint32_t built = fattree->cfg().no_of_nodes();
#else
    uint32_t built = fattree->no_of_nodes();
#endif
    if (built != ft_nodes) fail("fattree: htsim's fat-tree has " + to_string(built) + " hosts, not " + to_string(ft_nodes));
    for (FtPort& fp : ftports) {
        BaseQueue* q = nullptr;
        auto at = [&](vector<vector<vector<BaseQueue*>>>& v) -> BaseQueue* {
            if (fp.a < 0 || (size_t)fp.a >= v.size() || fp.b < 0 || (size_t)fp.b >= v[fp.a].size()) return nullptr;
            return v[fp.a][fp.b][0];
        };
        if (fp.tier == "ns_nlp") q = at(fattree->queues_ns_nlp);
        else if (fp.tier == "nlp_ns") q = at(fattree->queues_nlp_ns);
        else if (fp.tier == "nlp_nup") q = at(fattree->queues_nlp_nup);
        else if (fp.tier == "nup_nlp") q = at(fattree->queues_nup_nlp);
        else if (fp.tier == "nup_nc") q = at(fattree->queues_nup_nc);
        else if (fp.tier == "nc_nup") q = at(fattree->queues_nc_nup);
        else fail("ftport " + to_string(fp.id) + ": unknown tier " + fp.tier);
        if (!q) fail("ftport " + to_string(fp.id) + ": no queue " + fp.tier + "[" + to_string(fp.a) + "][" + to_string(fp.b) + "]");
        PortCount* c = new PortCount();
        c->id = fp.id;
        q->setLogger(c);
        counts[fp.id] = c;
        port_ids.push_back(fp.id);
    }
#ifdef FCTLAB_HTSIM_EQDS
    if (eqds_cwnd) {
        EqdsSrc::_min_rto = eqds_rto;
        EqdsSrc::_path_entropy_size = eqds_paths;
        for (uint32_t h = 0; h < ft_nodes; h++) {
            // as main_eqds.cpp:476, before any EqdsSrc exists: the pacer's packet time is
            // that of EqdsSrc::_mtu's static value (4096 + 64 B), whatever the packet size
            eqds_pacers.push_back(new EqdsPullPacer(ft_rate, eqds_pull_rate, EqdsSrc::_mtu, eventlist));
            eqds_nics.push_back(new EqdsNIC(eventlist, ft_rate));
        }
    }
#endif
#ifdef FCTLAB_HTSIM_UEC
    if (uec_set) {
        UecSrc::_sender_based_cc = true;
        UecSrc::_receiver_based_cc = false;
        UecSink::_oversubscribed_cc = false;
        UecSrc::_sender_cc_algo = UecSrc::NSCC;
        UecSrc::_mtu = Packet::data_packet_size();
        UecSrc::_mss = UecSrc::_mtu - UecSrc::_hdr_size;
        UecSrc::_min_rto = uec_rto;
        UecSink::_bytes_unacked_threshold = uec_sack;
        UecSrc::update_base_rtt_on_nack = uec_nack_rtt != 0;
        UecSrc::initNsccParams(uec_rtt, ft_rate, uec_target, -1, true);
        for (uint32_t h = 0; h < ft_nodes; h++) uec_nics.push_back(new UecNIC(h, eventlist, ft_rate, 1));
    }
#endif
}
#endif

// An EQDS or NSCC flow on htsim's fat-tree, wired as main_eqds.cpp and main_uec.cpp wire a
// connection: the source's route to its ToR, the sink's to its own, the ToRs told which
// flow's packets go to which of them (addHostPort).
static void setup_fattree_flow(Flow* f) {
#ifdef FCTLAB_HTSIM_FATTREE
    string id = to_string(f->id);
    if (!fattree) fail("flow " + id + ": " + f->kind + " before fattree");
    if (f->fwd.size() != 1 || f->rev.size() != 1) fail("flow " + id + ": give the source and destination hosts");
    uint32_t src = f->fwd[0], dst = f->rev[0];
    if (src >= ft_nodes || dst >= ft_nodes) fail("flow " + id + ": no such host");
    uint32_t stor = tor_of(src), dtor = tor_of(dst);
    f->out = new Route();
    f->out->push_back(fattree->queues_ns_nlp[src][stor][0]);
    f->out->push_back(fattree->pipes_ns_nlp[src][stor][0]);
    f->out->push_back(fattree->queues_ns_nlp[src][stor][0]->getRemoteEndpoint());
    f->back = new Route();
    f->back->push_back(fattree->queues_ns_nlp[dst][dtor][0]);
    f->back->push_back(fattree->pipes_ns_nlp[dst][dtor][0]);
    f->back->push_back(fattree->queues_ns_nlp[dst][dtor][0]->getRemoteEndpoint());
    string name = "_" + to_string(src) + "_" + to_string(dst);
    if (f->kind == "eqds") {
#ifdef FCTLAB_HTSIM_EQDS
        if (!eqds_cwnd) fail("flow " + id + ": eqds before its settings");
        TrackedEqds* s = new TrackedEqds(f, *eqds_nics[src]);
        s->setCwnd((mem_b)eqds_cwnd * Packet::data_packet_size());
        s->logFlowEvents(no_flow_events);
        s->setDst(dst);
        EqdsSink* k = new EqdsSink(nullptr, eqds_pacers[dst], *eqds_nics[dst]);
        s->setName("Eqds" + name);
        k->setSrc(src);
        k->setName("Eqds_sink" + name);
        if (f->pkts > 0) s->setFlowsize((uint64_t)f->pkts);
        s->setEndTrigger(*new DoneTrigger(f));
        fattree->switches_lp[stor]->addHostPort(src, k->flowId(), s);
        fattree->switches_lp[dtor]->addHostPort(dst, s->flowId(), k);
        f->eqds = s;
        f->eqds_sink = k;
#else
        fail("flow " + id + ": this htsim has no csg-htsim EQDS: build csg-htsim");
#endif
    } else {
#ifdef FCTLAB_HTSIM_UEC
        if (!uec_set) fail("flow " + id + ": nscc before its settings");
        TrackedUec* s = new TrackedUec(f, *uec_nics[src], (uint16_t)uec_paths);
        UecSink* k = new UecSink(nullptr, ft_rate, 1.1, UecBasePacket::unquantize(UecSink::_credit_per_pull), eventlist,
                                 *uec_nics[dst], 1);
        s->initNscc(0, uec_rtt);
        s->setDst(dst);
        s->setName("Uec" + name);
        k->setSrc(src);
        ((DataReceiver*)k)->setName("Uec_sink" + name);
        if (f->pkts > 0) s->setFlowsize((uint64_t)f->pkts);
        s->setEndTrigger(*new DoneTrigger(f));
        s->connectPort(0, *f->out, *f->back, *k, TRIGGER_START);
        fattree->switches_lp[stor]->addHostPort(src, k->flowId(), s->getPort(0));
        fattree->switches_lp[dtor]->addHostPort(dst, s->flowId(), k->getPort(0));
        f->uec = s;
        f->uec_sink = k;
#else
        fail("flow " + id + ": this htsim has no UEC transport (uec.h): build uet-htsim");
#endif
    }
#else
    fail("flow " + to_string(f->id) + ": " + f->kind + " runs on htsim's fat-tree: this driver was built without it");
#endif
}

int main(int argc, char** argv) {
    if (argc != 2) fail("usage: fctlab_htsim INPUT");
    ifstream in(argv[1]);
    if (!in) fail(string("cannot read ") + argv[1]);
    simtime_picosec scan = timeFromMs(1), stop = timeFromSec(3600);
    uint64_t cwnd = 0, ssthresh = 0, maxcwnd = 0xffffffff;
    simtime_picosec rto = 0;
    map<int, PortCount*> counts;
    map<int, LosslessInputQueue*> inputs;
    map<int, PauseTap*> taps;
    map<int, linkspeed_bps> rates;
    vector<int> port_ids;
    string line;
    while (getline(in, line)) {
        size_t hash = line.find('#');
        if (hash != string::npos) line = line.substr(0, hash);
        istringstream ls(line);
        string what;
        if (!(ls >> what)) continue;
        if (what == "packet") {
            int bytes;
            ls >> bytes;
            Packet::set_packet_size(bytes);
        } else if (what == "seed") {
            unsigned seed;
            ls >> seed;
            srand(seed);
            srandom(seed);
        } else if (what == "ndp") {
            ls >> ndp_iw >> ndp_pull_rate;
        } else if (what == "fattree") {
#ifdef FCTLAB_HTSIM_FATTREE
            double rate;
            ls >> ft_nodes >> rate >> ft_latency >> ft_queue;
            ft_rate = (linkspeed_bps)rate;
#else
            fail("fattree: this driver was built without htsim's fat-tree (datacenter/fat_tree_topology.h)");
#endif
        } else if (what == "ftport") {
            FtPort fp;
            ls >> fp.id >> fp.tier >> fp.a >> fp.b;
            ftports.push_back(fp);
        } else if (what == "eqds") {
#ifdef FCTLAB_HTSIM_EQDS
            ls >> eqds_cwnd >> eqds_paths >> eqds_rto >> eqds_pull_rate;
#else
            fail("eqds: this htsim has no csg-htsim EQDS (eqds.h with EqdsNIC(eventlist, rate)): build csg-htsim");
#endif
        } else if (what == "uec") {
#ifdef FCTLAB_HTSIM_UEC
            ls >> uec_rtt >> uec_target >> uec_paths >> uec_sack >> uec_rto >> uec_nack_rtt >> uec_ecn_min >> uec_ecn_max;
            uec_set = true;
#else
            fail("uec: this htsim has no UEC transport (uec.h): build uet-htsim");
#endif
        } else if (what == "scan") {
            ls >> scan;
        } else if (what == "stop") {
            ls >> stop;
        } else if (what == "tcp") {
            ls >> cwnd >> ssthresh >> rto >> maxcwnd;
        } else if (what == "pfc") {
            ls >> LosslessInputQueue::_high_threshold >> LosslessInputQueue::_low_threshold;
        } else if (what == "hpcc") {
            simtime_picosec T;
            ls >> T >> HPCCSrc::_eta >> HPCCSrc::_max_stages;
            HPCCSrc::_T = T;
        } else if (what == "dcqcn") {
#ifdef FCTLAB_HTSIM_DCQCN
            simtime_picosec period, cnp;
            ls >> DCQCNSrc::_g >> period >> DCQCNSrc::_F >> DCQCNSrc::_B >> cnp;
            DCQCNSrc::_cc_update_period = period;
            DCQCNSink::_cnp_interval = cnp;
            dcqcn_set = true;
#else
            fail("dcqcn: this htsim has no DCQCN (no dcqcn.h): build uet-htsim");
#endif
        } else if (what == "swift") {
            SwiftSettings& c = swift_cfg;
            ls >> c.ai >> c.beta >> c.max_mdf >> c.base >> c.hop_scale >> c.fs_range >> c.fs_min >> c.fs_max >>
                c.min_cwnd >> c.max_cwnd >> c.retx_reset >> c.iw >> c.scan;
            swift_scanner = new SwiftRtxTimerScanner(c.scan, eventlist);
        } else if (what == "port") {
            int id;
            double rate;
            simtime_picosec delay;
            int64_t maxsize, k;
            string kind = "queue";
            int ingress = 0;
            ls >> id >> rate >> delay >> maxsize >> k;
            if (!(ls >> kind)) kind = "queue";
            if (!(ls >> ingress)) ingress = 0;
            PortCount* c = new PortCount();
            c->id = id;
            BaseQueue* q;
            if (kind == "lossless") {
#ifdef FCTLAB_HTSIM_LOSSLESS_STATIC_ECN
                // one threshold for every lossless port (LosslessOutputQueue::_ecn_enabled, _K)
                lossless_k.insert(k);
                if (lossless_k.size() > 1) fail("port " + to_string(id) + ": this htsim has one ECN threshold for every lossless port");
                LosslessOutputQueue::_ecn_enabled = k >= 0 ? 1 : 0;
                LosslessOutputQueue::_K = k >= 0 ? (int)k : 0;
                q = new LosslessOutputQueue((linkspeed_bps)rate, maxsize, eventlist, c);
#else
                q = new LosslessOutputQueue((linkspeed_bps)rate, maxsize, eventlist, c, k >= 0 ? 1 : 0,
                                            k >= 0 ? (int)k : 0);
#endif
            }
            else if (kind == "host")
                q = new FairPriorityQueue((linkspeed_bps)rate, maxsize, eventlist, c);
            else if (kind == "sched") {
                q = new FairScheduler((linkspeed_bps)rate, eventlist, c);
            }
            else if (kind == "composite")
#ifdef FCTLAB_HTSIM_COMPOSITE_TRIM_SIZE
                q = new CompositeQueue((linkspeed_bps)rate, maxsize, eventlist, c, 64, false);
#else
                q = new CompositeQueue((linkspeed_bps)rate, maxsize, eventlist, c);
#endif
            else if (kind != "queue")
                fail("port " + to_string(id) + ": unknown kind " + kind);
            else if (k < 0)
                q = new Queue((linkspeed_bps)rate, maxsize, eventlist, c);
            else
                q = new ECNQueue((linkspeed_bps)rate, maxsize, eventlist, c, k);
            q->setName("q" + to_string(id));
            queues[id] = q;
            rates[id] = (linkspeed_bps)rate;
            pipes[id] = new Pipe(delay, eventlist);
            pipes[id]->setName("p" + to_string(id));
            counts[id] = c;
            port_ids.push_back(id);
            if (ingress) {
                if (LosslessInputQueue::_high_threshold == 0) fail("port " + to_string(id) + ": ingress before pfc");
                // the far end's count of what came in by this port; its frames reach this port
                // after the link's delay (as in htsim's FatTreeTopology, whose wire latency
                // is the hop's)
                LosslessInputQueue* in = new LosslessInputQueue(eventlist, q);
                in->setName("in" + to_string(id));
                PauseTap* tap = new PauseTap();
                tap->id = id;
                tap->port = q;
                taps[id] = tap;
                in->setRemoteEndpoint(new CallbackPipe(delay, eventlist, tap));
                inputs[id] = in;
            }
        } else if (what == "group") {
            int id, n;
            ls >> id >> n;
            group_left[id] = n;
        } else if (what == "flow") {
            Flow* f = new Flow();
            ls >> f->id >> f->kind >> f->pkts >> f->start >> f->group >> f->after;
            string tok;
            bool back = false;
            while (ls >> tok) {
                if (tok == "/") {
                    back = true;
                    continue;
                }
                (back ? f->rev : f->fwd).push_back(stoi(tok));
            }
            flows.push_back(f);
            by_id[f->id] = f;
        } else if (what == "path") {
            int id;
            string dir;
            ls >> id >> dir;
            if (!by_id.count(id)) fail("path before its flow " + to_string(id));
            vector<int> ports;
            int p;
            while (ls >> p) {
                if (!queues.count(p)) fail("flow " + to_string(id) + ": no port " + to_string(p));
                ports.push_back(p);
            }
            if (ports.empty()) fail("flow " + to_string(id) + ": an empty path");
            if (dir == "fwd")
                by_id[id]->fwd_paths.push_back(ports);
            else if (dir == "rev")
                by_id[id]->rev_paths.push_back(ports);
            else
                fail("path: fwd or rev, not " + dir);
        } else {
            fail("unknown line: " + line);
        }
    }
    if (Packet::data_packet_size() <= 0) fail("no packet size");
    eventlist.setEndtime(stop);
#ifdef FCTLAB_HTSIM_FATTREE
    if (ft_nodes) build_fattree(counts, port_ids);
#endif
    TcpRtxTimerScanner scanner(scan, eventlist);
    auto path = [&](Flow* f, const vector<int>& ports, Route* r) {
        for (int p : ports) {
            if (!queues.count(p)) fail("flow " + to_string(f->id) + ": no port " + to_string(p));
            r->push_back(queues[p]);
            r->push_back(pipes[p]);
            if (inputs.count(p)) r->push_back(inputs[p]);
        }
    };
    for (Flow* f : flows) {
        f->out = new Route();
        f->back = new Route();
        if (f->kind != "eqds" && f->kind != "nscc") {
            path(f, f->fwd, f->out);
            path(f, f->rev, f->back);
        }
        if (f->pkts >= 0)
            finite_left++;
        else
            any_long = true;
        if (f->kind == "eqds" || f->kind == "nscc") {
            setup_fattree_flow(f);
        } else if (f->kind == "ndp") {
            if (!ndp_iw) fail("flow " + to_string(f->id) + ": ndp before its settings");
            if (f->fwd_paths.empty() || f->rev_paths.empty()) fail("flow " + to_string(f->id) + ": no paths");
            if (!dynamic_cast<HostQueue*>(queues[f->fwd_paths[0][0]]))
                fail("flow " + to_string(f->id) + ": its first port is not a host queue (NdpSrc needs one)");
            NdpSrc::setRouteStrategy(SCATTER_PERMUTE);
            NdpSink::setRouteStrategy(SCATTER_PERMUTE);
            // the receiving host: the first port of its ACK paths, its NIC
            int nic = f->rev_paths[0][0];
            if (!pacers.count(nic)) pacers[nic] = new NdpPullPacer(eventlist, rates[nic], ndp_pull_rate);
            TrackedNdp* src = new TrackedNdp(f);
            src->setName("ndp" + to_string(f->id));
            src->setCwnd((uint32_t)(ndp_iw * Packet::data_packet_size()));
            if (f->pkts >= 0) src->set_flowsize((uint64_t)f->pkts * Packet::data_packet_size());
            NdpSink* sink = new NdpSink(pacers[nic]);
            sink->setName("ndp_sink" + to_string(f->id));
            f->ndp = src;
            f->ndp_sink = sink;
        } else if (f->kind == "swift") {
            if (!swift_scanner) fail("flow " + to_string(f->id) + ": swift before its settings");
            if (f->fwd.empty() || !dynamic_cast<BaseScheduler*>(queues[f->fwd[0]]))
                fail("flow " + to_string(f->id) + ": its first port is not a scheduler (kind sched)");
            SwiftSrc* src = new TrackedSwift(f, *swift_scanner);
            src->setName("src" + to_string(f->id));
            const SwiftSettings& c = swift_cfg;
            src->_ai = c.ai;
            src->_beta = c.beta;
            src->_max_mdf = c.max_mdf;
            src->_base_delay = c.base;
            src->_h = c.base / c.hop_scale;
            src->_fs_range = (simtime_picosec)(c.fs_range * c.base);
            src->_fs_min_cwnd = c.fs_min;
            src->_fs_max_cwnd = c.fs_max;
            // as SwiftSrc's constructor derives them from the three above (swift.cpp)
            src->_fs_alpha = src->_fs_range / ((1.0 / sqrt(src->_fs_min_cwnd)) - (1.0 / sqrt(src->_fs_max_cwnd)));
            src->_fs_beta = -src->_fs_alpha / sqrt(src->_fs_max_cwnd);
            src->_min_cwnd = c.min_cwnd;
            src->_max_cwnd = (uint32_t)(c.max_cwnd * src->_mss);
            src->_rtx_reset_threshold = c.retx_reset;
            // SwiftSrc sends while the next data byte's packet fits in flow size + mss: this
            // size sends exactly `pkts` packets
            if (f->pkts > 0) src->set_flowsize((uint64_t)(f->pkts - 1) * src->_mss);
            SwiftSink* sink = new SwiftSink();
            sink->setName("sink" + to_string(f->id));
            f->back->push_back(new AckTap(f));
            // the data route again, with the tap behind its first pipe
            Route* out = new Route();
            for (size_t i = 0; i < f->out->size(); i++) {
                out->push_back(f->out->at(i));
                if (i == 1) out->push_back(new DataTap(f));
            }
            f->out = out;
            f->swift = src;
            f->sink_any = sink;
        } else if (f->kind == "roce" || f->kind == "dcqcn" || f->kind == "hpcc") {
            // the NIC's rate: the source paces at it (RoceSrc), starts from it (DCQCNSrc, which
            // also takes its increase steps from it) or starts from it (HPCCSrc)
            if (f->fwd.empty()) fail("flow " + to_string(f->id) + ": no path");
            HostQueue* nic = dynamic_cast<HostQueue*>(queues[f->fwd[0]]);
            if (!nic) fail("flow " + to_string(f->id) + ": its first port is not a host queue");
            linkspeed_bps rate = rates[f->fwd[0]];
            PacketSink* s;
            if (f->kind == "roce" || f->kind == "dcqcn") {
                RoceSrc* src = nullptr;
                RoceSink* sink = nullptr;
                if (f->kind == "dcqcn") {
#ifdef FCTLAB_HTSIM_DCQCN
                    if (!dcqcn_set) fail("flow " + to_string(f->id) + ": dcqcn before its settings");
                    src = new TrackedRdma<DCQCNSrc>(f, rate);
                    sink = new DCQCNSink(eventlist);
#else
                    fail("flow " + to_string(f->id) + ": this htsim has no DCQCN (no dcqcn.h): build uet-htsim");
#endif
                } else {
                    src = new TrackedRdma<RoceSrc>(f, rate);
                    sink = new RoceSink();
                }
                src->setName("src" + to_string(f->id));
#ifdef FCTLAB_HTSIM_ROCE_PACKET_SEQNO
                // RoceSrc sends while _highest_sent x _mss <= the flow size (one packet more than
                // the size in packets) and is done when ackno x _mss >= it: (pkts - 1) x mss + 1
                // sends exactly pkts packets and is done at the last one's ACK
                f->packet_seqno = true;
                if (f->pkts > 0) src->set_flowsize((uint64_t)(f->pkts - 1) * src->_mss + 1);
#else
                if (f->pkts >= 0) src->set_flowsize((uint64_t)f->pkts * src->_mss);
#endif
                sink->RoceSink::setName("sink" + to_string(f->id));
                f->out->push_back(sink);
                f->back->push_back(src);
                src->connect(f->out, f->back, *sink, TRIGGER_START);
                f->roce = src;
                s = src;
                flow_of[src->flow_id()] = f->id;
            } else {
                HPCCSrc* src = new TrackedRdma<HPCCSrc>(f, rate);
                src->setName("src" + to_string(f->id));
                if (f->pkts >= 0) src->set_flowsize((uint64_t)f->pkts * src->_mss);
                HPCCSink* sink = new HPCCSink();
                sink->setName("sink" + to_string(f->id));
                f->out->push_back(sink);
                f->back->push_back(src);
                src->connect(f->out, f->back, *sink, TRIGGER_START);
                f->hpcc = src;
                s = src;
                flow_of[src->flow_id()] = f->id;
            }
            // the host's NIC hands PAUSE and RESUME frames to its senders (main_roce.cpp)
            nic->addHostSender(s);
        } else {
            TcpSrc* src;
            if (f->kind == "dctcp")
                src = new Tracked<DCTCPSrc>(f);
            else if (f->kind == "tcp")
                src = new Tracked<TcpSrc>(f);
            else
                fail("unknown flow kind " + f->kind);
            src->setName("src" + to_string(f->id));
            if (cwnd) src->set_cwnd(cwnd);
            if (ssthresh) src->set_ssthresh(ssthresh);
            if (rto) src->_rto = rto;
            src->_maxcwnd = maxcwnd;
            if (f->pkts >= 0) {
                // TcpSrc sends while highest_sent <= flow_size + 1 (its sequence numbers start
                // after the SYN's one byte): this flow size sends exactly `pkts` packets
                src->_flow_size = f->pkts > 0 ? (uint64_t)(f->pkts - 1) * src->_mss + 1 : 0;
            }
            TcpSink* sink = new TcpSink();
            sink->setName("sink" + to_string(f->id));
            f->src = src;
            f->sink = sink;
            f->out->push_back(sink);
            f->back->push_back(src);
            scanner.registerTcp(*src);
        }
        if (f->after >= 0)
            waiters[f->after].push_back(f);
        else
            start(f, f->start);
    }
    simtime_picosec end = 0;
    while (EventList::doNextEvent()) {
        end = EventList::now();
        if (finite_left == 0 && !any_long) break;
    }
    if (end > stop) end = stop;
    if (finite_left > 0 || any_long) end = stop;
    for (Flow* f : flows) {
        printf("A %d %llu %llu %lld %llu\n", f->id, (unsigned long long)f->acked(), (unsigned long long)resent(f),
               timeouts(f), (unsigned long long)f->sent());
    }
    for (int id : port_ids) {
        PortCount* c = counts[id];
        c->last = c->last > end ? end : c->last;
        double waiting = c->inq > 1 ? (double)(c->inq - 1) : 0.0;
        double qint = c->qint + waiting * timeAsSec(end - c->last);
        unsigned long long pauses = taps.count(id) ? (unsigned long long)taps[id]->pauses : 0ULL;
        printf("L %d %llu %llu %llu %llu %.12g %llu %llu\n", id, (unsigned long long)c->pkts,
               (unsigned long long)c->bytes, (unsigned long long)c->drops, (unsigned long long)c->marks, qint, pauses,
               (unsigned long long)c->trims);
    }
    printf("T %.12g\n", timeAsSec(end));
    return 0;
}
