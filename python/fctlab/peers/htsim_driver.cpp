// fctlab's driver for htsim (Broadcom/csg-htsim): runs a flow list with sizes, start times and
// dependencies over an explicit network of ports, with htsim's own TCP and DCTCP sources
// (TcpSrc, DCTCPSrc), sink (TcpSink), queues (Queue, ECNQueue) and pipes (Pipe).
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
//   scan PS                       period of the retransmission-timer scan (TcpRtxTimerScanner)
//   stop PS                       end of the run
//   tcp CWND SSTHRESH RTO MAXCWND initial window, slow-start threshold (bytes), initial RTO
//                                 (ps), largest window (bytes)
//   port ID RATE_BPS DELAY_PS MAXSIZE K   a queue (bytes; K = -1: drop-tail, else ECNQueue
//                                 marking at K bytes) and the pipe behind it
//   group ID MEMBERS              a group: its flows' number
//   flow ID KIND PKTS START_PS GROUP AFTER FWD... / REV...
//                                 KIND tcp|dctcp; PKTS data packets (-1: long-lived); GROUP its
//                                 group or -1; AFTER the group it waits for or -1 (START_PS is
//                                 then the delay after that group completes); FWD and REV the
//                                 port ids of the data and the ACK path
//
// Output lines:
//   S ID T                        flow ID started at T seconds
//   F ID T RETX TIMEOUTS SENT     flow ID completed at T (all data acknowledged)
//   A ID ACKED RETX TIMEOUTS SENT at the end, every flow: packets acknowledged, data packets
//                                 resent, timeouts, data packets sent
//   L ID PKTS BYTES DROPS MARKS QINT   at the end, every port: departures, dropped packets,
//                                 CE-marked data departures, integral of waiting packets (pkt s)
//   D T PORT FLOW N               packet N (data from 0, the SYN -1) of FLOW dropped at PORT
//                                 at T (ACKs are not listed)
//   T END                         the time the run ended (seconds)
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "config.h"
#include "dctcp.h"
#include "ecn.h"
#include "ecnqueue.h"
#include "eventlist.h"
#include "loggertypes.h"
#include "network.h"
#include "pipe.h"
#include "queue.h"
#include "route.h"
#include "tcp.h"
#include "tcppacket.h"

using namespace std;

static EventList eventlist;
static map<flowid_t, int> flow_of;  // htsim's packet flow id -> the input's flow id

struct PortCount : public QueueLogger {
    int id = 0;
    uint64_t pkts = 0, bytes = 0, drops = 0, marks = 0;
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
            if (pkt.type() == TCP && (pkt.flags() & ECN_CE)) marks++;
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
    Route *out = nullptr, *back = nullptr;
    bool started = false, done = false;
    uint64_t timeouts = 0, max_sent = 0;
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

static vector<Flow*> flows;
static map<int, Flow*> by_id;
static map<int, int> group_left;
static map<int, vector<Flow*>> waiters;
static int64_t finite_left = 0;
static bool any_long = false;

static uint64_t resent(Flow* f) {
    uint64_t mss = f->src->_mss;
    uint64_t sent = f->src->_packets_sent / mss;
    uint64_t distinct = f->max_sent > 1 ? (f->max_sent - 1) / mss : 0;
    return sent > distinct ? sent - distinct : 0;
}

static void start(Flow* f, simtime_picosec at) {
    f->src->connect(*f->out, *f->back, *f->sink, at);
    flow_of[f->src->getFlowId()] = f->id;
}

static void flow_finished(Flow* f) {
    f->done = true;
    printf("F %d %.12g %llu %llu %llu\n", f->id, timeAsSec(EventList::now()), (unsigned long long)resent(f),
           (unsigned long long)f->timeouts, (unsigned long long)(f->src->_packets_sent / f->src->_mss));
    finite_left--;
    if (f->group >= 0 && --group_left[f->group] == 0) {
        for (Flow* w : waiters[f->group]) start(w, EventList::now() + w->start);
    }
}

static void fail(const string& msg) {
    cerr << "fctlab_htsim: " << msg << endl;
    exit(2);
}

int main(int argc, char** argv) {
    if (argc != 2) fail("usage: fctlab_htsim INPUT");
    ifstream in(argv[1]);
    if (!in) fail(string("cannot read ") + argv[1]);
    simtime_picosec scan = timeFromMs(1), stop = timeFromSec(3600);
    uint64_t cwnd = 0, ssthresh = 0, maxcwnd = 0xffffffff;
    simtime_picosec rto = 0;
    map<int, BaseQueue*> queues;
    map<int, Pipe*> pipes;
    map<int, PortCount*> counts;
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
        } else if (what == "scan") {
            ls >> scan;
        } else if (what == "stop") {
            ls >> stop;
        } else if (what == "tcp") {
            ls >> cwnd >> ssthresh >> rto >> maxcwnd;
        } else if (what == "port") {
            int id;
            double rate;
            simtime_picosec delay;
            int64_t maxsize, k;
            ls >> id >> rate >> delay >> maxsize >> k;
            PortCount* c = new PortCount();
            c->id = id;
            BaseQueue* q;
            if (k < 0)
                q = new Queue((linkspeed_bps)rate, maxsize, eventlist, c);
            else
                q = new ECNQueue((linkspeed_bps)rate, maxsize, eventlist, c, k);
            q->setName("q" + to_string(id));
            queues[id] = q;
            pipes[id] = new Pipe(delay, eventlist);
            pipes[id]->setName("p" + to_string(id));
            counts[id] = c;
            port_ids.push_back(id);
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
        } else {
            fail("unknown line: " + line);
        }
    }
    if (Packet::data_packet_size() <= 0) fail("no packet size");
    eventlist.setEndtime(stop);
    TcpRtxTimerScanner scanner(scan, eventlist);
    for (Flow* f : flows) {
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
            finite_left++;
        } else {
            any_long = true;
        }
        TcpSink* sink = new TcpSink();
        sink->setName("sink" + to_string(f->id));
        f->src = src;
        f->sink = sink;
        f->out = new Route();
        for (int p : f->fwd) {
            if (!queues.count(p)) fail("flow " + to_string(f->id) + ": no port " + to_string(p));
            f->out->push_back(queues[p]);
            f->out->push_back(pipes[p]);
        }
        f->out->push_back(sink);
        f->back = new Route();
        for (int p : f->rev) {
            if (!queues.count(p)) fail("flow " + to_string(f->id) + ": no port " + to_string(p));
            f->back->push_back(queues[p]);
            f->back->push_back(pipes[p]);
        }
        f->back->push_back(src);
        scanner.registerTcp(*src);
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
        uint64_t mss = f->src->_mss;
        uint64_t acked = f->src->_last_acked > 1 ? (f->src->_last_acked - 1) / mss : 0;
        printf("A %d %llu %llu %llu %llu\n", f->id, (unsigned long long)acked, (unsigned long long)resent(f),
               (unsigned long long)f->timeouts, (unsigned long long)(f->src->_packets_sent / mss));
    }
    for (int id : port_ids) {
        PortCount* c = counts[id];
        c->last = c->last > end ? end : c->last;
        double waiting = c->inq > 1 ? (double)(c->inq - 1) : 0.0;
        double qint = c->qint + waiting * timeAsSec(end - c->last);
        printf("L %d %llu %llu %llu %llu %.12g\n", id, (unsigned long long)c->pkts, (unsigned long long)c->bytes,
               (unsigned long long)c->drops, (unsigned long long)c->marks, qint);
    }
    printf("T %.12g\n", timeAsSec(end));
    return 0;
}
