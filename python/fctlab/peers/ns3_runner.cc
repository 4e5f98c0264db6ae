// fctlab's generic ns-3 runner: runs a plan written by fctlab.crosscheck.ns3 (a text file)
// and prints per-flow results and per-port counters. Compiled once against the ns3 wheel
// from PyPI (fctlab.peers.ns3); no scenario is compiled in.
//
// Usage: ns3_runner PLAN_FILE
//
// Plan file, one item per line, fields separated by blanks ('#' starts a comment line):
//   seed S                      RNG run number (RED's draws; the flows come from fctlab)
//   stop T | stop none          stop time in seconds; "none": when the last sized flow completes
//   set NAME VALUE              Config::SetDefault(NAME, VALUE) before anything is created
//   node NAME                   a node (index = order of the node lines)
//   link A B DELAY_S            a point-to-point link between nodes A and B (indices)
//   port P LINK DIR RATE_BPS KIND LIMIT K
//                               the output port P of LINK (DIR 0: A->B, 1: B->A): its rate, a
//                               queue disc KIND fifo|red holding up to LIMIT waiting packets
//                               (-1: unlimited) with the ECN step threshold K (red)
//   cwnd INTERVAL ID...         print the window of the flows ID... every INTERVAL seconds
//   flow ID SRC DST SIZE START CC ECN GROUP AFTER
//                               a TCP flow from node SRC to node DST of SIZE bytes (-1: long-
//                               lived) with congestion control CC (linuxreno|newreno|cubic|
//                               dctcp|dctcp-floor|bbr) and
//                               ECN 0|1; member of GROUP (-1: none); AFTER -1: starts at START
//                               (s), else START seconds after every flow of group AFTER completed
//
// Output (stdout):
//   S ID T                      flow ID opened its connection at T
//   F ID T_ACK T_RX             flow ID completed: the sender got the ACK of its last byte at
//                               T_ACK, the receiver its last byte at T_RX
//   W ID T CWND SSTHRESH RXBYTES  a window sample (bytes) of a running flow, with the bytes its
//                               receiver has read so far
//   R ID T STATE                a retransmission timeout of flow ID's data at T, in congestion
//                               state STATE (CA_OPEN, CA_DISORDER, CA_CWR, CA_RECOVERY, CA_LOSS)
//   T NOW                       the end of the run
//   A ID RXBYTES RETX TIMEOUTS DATAPKTS
//                               per flow: bytes its receiver got in order, data segments sent
//                               again, retransmission timer expiries (data and SYN), data
//                               segments sent (first transmissions and retransmissions)
//   L P TXPKTS TXBYTES DROPS MARKS QINT
//                               per port: IP packets and bytes sent onto the link, packets
//                               dropped, packets marked CE, and the integral over time of the
//                               waiting packets (queue disc and device queue; packet-seconds)

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

struct LinkSpec
{
    uint32_t a, b;
    double delay;
};

struct PortSpec
{
    uint32_t link, dir;
    double rate;
    std::string kind;
    int64_t limit;
    double k;
};

struct FlowState
{
    uint32_t id, src, dst;
    int64_t size; // -1: long-lived
    double start;
    std::string cc;
    bool ecn;
    int64_t group, after;
    uint16_t port = 0;
    Ptr<Socket> snd;
    Ptr<Socket> listen;
    int64_t queued = 0;   // bytes handed to the sender's socket
    int64_t rxBytes = 0;  // bytes the receiver read, in order
    uint64_t retx = 0, timeouts = 0, dataPkts = 0, syns = 0;
    bool started = false, done = false, rxDone = false;
    double startT = -1, ackT = -1, rxT = -1;
    uint32_t cwnd = 0, ssthresh = 0;
    TcpSocketState::TcpCongState_t congState = TcpSocketState::CA_OPEN;
};

// ns-3's TcpDctcp with Linux's floor: dctcp_ssthresh (net/ipv4/tcp_dctcp.c) returns
// max(cwnd - cwnd * alpha / 2, 2 segments); TcpDctcp::GetSsThresh has no floor, so its window
// can fall below one segment, and a sender with less than a segment of window and more data
// waits for the retransmission timer (TcpSocketBase::SendPendingData sends no partial segment
// while more data waits).
class TcpDctcpFloor : public TcpDctcp
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("ns3::FctlabTcpDctcpFloor")
                                .SetParent<TcpDctcp>()
                                .SetGroupName("Internet")
                                .AddConstructor<TcpDctcpFloor>();
        return tid;
    }

    std::string GetName() const override
    {
        return "TcpDctcpFloor";
    }

    uint32_t GetSsThresh(Ptr<const TcpSocketState> tcb, uint32_t bytesInFlight) override
    {
        return std::max(TcpDctcp::GetSsThresh(tcb, bytesInFlight), 2 * tcb->m_segmentSize);
    }

    Ptr<TcpCongestionOps> Fork() override
    {
        return CopyObject<TcpDctcpFloor>(this);
    }
};

std::vector<FlowState> g_flows;
std::map<int64_t, int64_t> g_groupLeft;
std::map<int64_t, std::vector<uint32_t>> g_waiters;
int64_t g_finiteLeft = 0;
bool g_anyLong = false;
const int64_t kChunk = 1 << 20; // bytes handed to a socket per Send

void Fail(const std::string& msg)
{
    std::fprintf(stderr, "ns3_runner: %s\n", msg.c_str());
    std::exit(2);
}

void StartFlow(uint32_t i);

void FlowCompleted(FlowState& f)
{
    std::printf("F %u %.9f %.9f\n", f.id, f.ackT, f.rxT);
    if (f.group >= 0 && --g_groupLeft[f.group] == 0)
    {
        for (uint32_t w : g_waiters[f.group])
        {
            Simulator::Schedule(Seconds(g_flows[w].start), &StartFlow, w);
        }
    }
    if (--g_finiteLeft == 0 && !g_anyLong)
    {
        Simulator::Stop();
    }
}

void MaybeDone(FlowState& f)
{
    if (!f.done && f.ackT >= 0 && f.rxDone)
    {
        f.done = true;
        FlowCompleted(f);
    }
}

void SendMore(uint32_t i, Ptr<Socket> s, uint32_t)
{
    FlowState& f = g_flows[i];
    while (f.size < 0 || f.queued < f.size)
    {
        int64_t room = s->GetTxAvailable();
        int64_t n = std::min<int64_t>(room, kChunk);
        if (f.size >= 0)
        {
            n = std::min<int64_t>(n, f.size - f.queued);
        }
        if (n <= 0)
        {
            break;
        }
        int sent = s->Send(Create<Packet>(static_cast<uint32_t>(n)));
        if (sent <= 0)
        {
            break;
        }
        f.queued += sent;
    }
}

void Connected(uint32_t i, Ptr<Socket> s)
{
    SendMore(i, s, 0);
}

void ConnectFailed(uint32_t i, Ptr<Socket>)
{
    std::fprintf(stderr, "ns3_runner: flow %u: connection failed\n", i);
}

void AckAdvanced(uint32_t i, SequenceNumber32, SequenceNumber32 ack)
{
    FlowState& f = g_flows[i];
    // the SYN takes sequence number 0 (ns-3's initial sequence number); data start at 1
    if (f.size >= 0 && f.ackT < 0 && static_cast<int64_t>(ack.GetValue()) >= f.size + 1)
    {
        f.ackT = Simulator::Now().GetSeconds();
        MaybeDone(f);
    }
}

void SenderTx(uint32_t i, Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>)
{
    FlowState& f = g_flows[i];
    if (h.GetFlags() & TcpHeader::SYN)
    {
        if (++f.syns > 1)
        {
            ++f.timeouts; // a SYN sent again: its timer expired
        }
    }
    else if (p->GetSize() > 0)
    {
        ++f.dataPkts;
    }
}

void SenderRetx(uint32_t i,
                Ptr<const Packet> p,
                const TcpHeader&,
                const Address&,
                const Address&,
                Ptr<const TcpSocketBase>)
{
    if (p->GetSize() > 0)
    {
        ++g_flows[i].retx;
    }
}

void CwndChanged(uint32_t i, uint32_t, uint32_t v)
{
    g_flows[i].cwnd = v;
}

void SsthreshChanged(uint32_t i, uint32_t, uint32_t v)
{
    g_flows[i].ssthresh = v;
}

std::vector<uint32_t> g_cwndFlows;
double g_cwndInterval = 0;

void SampleCwnd(uint64_t k)
{
    double now = Simulator::Now().GetSeconds();
    for (uint32_t i : g_cwndFlows)
    {
        const FlowState& f = g_flows[i];
        if (f.started && !f.done)
        {
            std::printf("W %u %.9f %u %u %lld\n", f.id, now, f.cwnd, f.ssthresh,
                        static_cast<long long>(f.rxBytes));
        }
    }
    Simulator::Schedule(Seconds((k + 1) * g_cwndInterval) - Simulator::Now(), &SampleCwnd, k + 1);
}

void RtoChanged(uint32_t i, Time oldV, Time newV)
{
    // TcpSocketBase::ReTxTimeout doubles the RTO (capped at 60 s); an RTT sample sets it anew.
    // The doubling comes before ReTxTimeout sets CA_LOSS: the state is the one it found.
    if (newV != oldV && newV == Min(oldV + oldV, Seconds(60)))
    {
        FlowState& f = g_flows[i];
        ++f.timeouts;
        std::printf("R %u %.9f %s\n",
                    f.id,
                    Simulator::Now().GetSeconds(),
                    TcpSocketState::TcpCongStateName[f.congState]);
    }
}

void CongStateChanged(uint32_t i, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t v)
{
    g_flows[i].congState = v;
}

void ReceiverRead(uint32_t i, Ptr<Socket> s)
{
    FlowState& f = g_flows[i];
    Ptr<Packet> p;
    while ((p = s->Recv()))
    {
        f.rxBytes += p->GetSize();
    }
    if (f.size >= 0 && !f.rxDone && f.rxBytes >= f.size)
    {
        f.rxDone = true;
        f.rxT = Simulator::Now().GetSeconds();
        MaybeDone(f);
    }
}

void Accepted(uint32_t i, Ptr<Socket> s, const Address&)
{
    s->SetRecvCallback(MakeBoundCallback(&ReceiverRead, i));
}

bool AcceptAll(Ptr<Socket>, const Address&)
{
    return true;
}

// the waiting packets of a port over time: the queue disc's and the device queue's
struct QueueIntegral
{
    uint32_t qdisc = 0, device = 0;
    double last = 0, sum = 0;

    void Advance()
    {
        double now = Simulator::Now().GetSeconds();
        sum += (qdisc + device) * (now - last);
        last = now;
    }
};

std::vector<QueueIntegral> g_qint;

void QdiscLen(uint32_t p, uint32_t, uint32_t n)
{
    g_qint[p].Advance();
    g_qint[p].qdisc = n;
}

void DeviceLen(uint32_t p, uint32_t, uint32_t n)
{
    g_qint[p].Advance();
    g_qint[p].device = n;
}

std::vector<Ptr<Node>> g_nodes;
std::vector<Ipv4Address> g_addr; // a node's first interface address

TypeId CcType(const std::string& cc)
{
    if (cc == "linuxreno")
        return TcpLinuxReno::GetTypeId();
    if (cc == "newreno")
        return TcpNewReno::GetTypeId();
    if (cc == "cubic")
        return TcpCubic::GetTypeId();
    if (cc == "dctcp")
        return TcpDctcp::GetTypeId();
    if (cc == "dctcp-floor")
        return TcpDctcpFloor::GetTypeId();
    if (cc == "bbr")
        return TcpBbr::GetTypeId();
    Fail("unknown congestion control " + cc);
    return TypeId();
}

Ptr<Socket> NewSocket(uint32_t node, const FlowState& f)
{
    Ptr<TcpL4Protocol> tcp = g_nodes[node]->GetObject<TcpL4Protocol>();
    Ptr<Socket> s = tcp->CreateSocket(CcType(f.cc));
    if (f.ecn)
    {
        s->SetAttribute("UseEcn", EnumValue(TcpSocketState::On));
    }
    return s;
}

void StartFlow(uint32_t i)
{
    FlowState& f = g_flows[i];
    f.started = true;
    f.startT = Simulator::Now().GetSeconds();
    std::printf("S %u %.9f\n", f.id, f.startT);
    Ptr<Socket> s = NewSocket(f.src, f);
    f.snd = s;
    s->TraceConnectWithoutContext("HighestRxAck", MakeBoundCallback(&AckAdvanced, i));
    s->TraceConnectWithoutContext("Tx", MakeBoundCallback(&SenderTx, i));
    s->TraceConnectWithoutContext("Retransmission", MakeBoundCallback(&SenderRetx, i));
    s->TraceConnectWithoutContext("RTO", MakeBoundCallback(&RtoChanged, i));
    s->TraceConnectWithoutContext("CongestionWindow", MakeBoundCallback(&CwndChanged, i));
    s->TraceConnectWithoutContext("SlowStartThreshold", MakeBoundCallback(&SsthreshChanged, i));
    s->TraceConnectWithoutContext("CongState", MakeBoundCallback(&CongStateChanged, i));
    s->Bind();
    s->SetConnectCallback(MakeBoundCallback(&Connected, i), MakeBoundCallback(&ConnectFailed, i));
    s->SetSendCallback(MakeBoundCallback(&SendMore, i));
    s->Connect(InetSocketAddress(g_addr[f.dst], f.port));
}

std::vector<std::string> Split(const std::string& line)
{
    std::istringstream is(line);
    std::vector<std::string> out;
    std::string w;
    while (is >> w)
    {
        out.push_back(w);
    }
    return out;
}

} // namespace

int
main(int argc, char* argv[])
{
    if (argc != 2)
    {
        Fail("usage: ns3_runner PLAN_FILE");
    }
    std::ifstream in(argv[1]);
    if (!in)
    {
        Fail(std::string("cannot read ") + argv[1]);
    }
    std::vector<std::string> names;
    std::vector<LinkSpec> links;
    std::vector<PortSpec> ports;
    double stop = -1;
    uint64_t seed = 1;
    std::string line;
    int lineno = 0;
    while (std::getline(in, line))
    {
        ++lineno;
        auto w = Split(line);
        if (w.empty() || w[0][0] == '#')
        {
            continue;
        }
        auto need = [&](size_t n) {
            if (w.size() != n)
                Fail("line " + std::to_string(lineno) + ": expected " + std::to_string(n) +
                     " fields: " + line);
        };
        const std::string& k = w[0];
        if (k == "seed")
        {
            need(2);
            seed = std::stoull(w[1]);
        }
        else if (k == "stop")
        {
            need(2);
            stop = w[1] == "none" ? -1 : std::stod(w[1]);
        }
        else if (k == "set")
        {
            need(3);
            Config::SetDefault(w[1], StringValue(w[2]));
        }
        else if (k == "node")
        {
            need(2);
            names.push_back(w[1]);
        }
        else if (k == "link")
        {
            need(4);
            links.push_back({static_cast<uint32_t>(std::stoul(w[1])),
                             static_cast<uint32_t>(std::stoul(w[2])),
                             std::stod(w[3])});
        }
        else if (k == "port")
        {
            need(8);
            PortSpec p{static_cast<uint32_t>(std::stoul(w[2])),
                       static_cast<uint32_t>(std::stoul(w[3])),
                       std::stod(w[4]),
                       w[5],
                       std::stoll(w[6]),
                       std::stod(w[7])};
            if (std::stoul(w[1]) != ports.size())
                Fail("line " + std::to_string(lineno) + ": ports must be numbered in order");
            ports.push_back(p);
        }
        else if (k == "cwnd")
        {
            if (w.size() < 2)
                Fail("line " + std::to_string(lineno) + ": cwnd INTERVAL ID...");
            g_cwndInterval = std::stod(w[1]);
            for (size_t j = 2; j < w.size(); ++j)
                g_cwndFlows.push_back(std::stoul(w[j]));
        }
        else if (k == "flow")
        {
            need(10);
            FlowState f;
            f.id = std::stoul(w[1]);
            f.src = std::stoul(w[2]);
            f.dst = std::stoul(w[3]);
            f.size = std::stoll(w[4]);
            f.start = std::stod(w[5]);
            f.cc = w[6];
            f.ecn = w[7] == "1";
            f.group = std::stoll(w[8]);
            f.after = std::stoll(w[9]);
            g_flows.push_back(f);
        }
        else
        {
            Fail("line " + std::to_string(lineno) + ": unknown item " + k);
        }
    }
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    NodeContainer all;
    all.Create(names.size());
    InternetStackHelper stack;
    stack.Install(all);
    for (uint32_t i = 0; i < names.size(); ++i)
    {
        g_nodes.push_back(all.Get(i));
    }
    g_addr.assign(names.size(), Ipv4Address());
    std::vector<bool> hasAddr(names.size(), false);

    // every port: a queue disc of its own in front of a one-packet device queue (the device
    // stops the traffic-control layer while that packet waits, so the queue disc holds the rest)
    PointToPointHelper p2p;
    p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize("1p")));
    std::vector<NetDeviceContainer> devs;
    for (size_t l = 0; l < links.size(); ++l)
    {
        const LinkSpec& L = links[l];
        p2p.SetChannelAttribute("Delay", TimeValue(Seconds(L.delay)));
        NetDeviceContainer d = p2p.Install(g_nodes[L.a], g_nodes[L.b]);
        devs.push_back(d);
        Ipv4AddressHelper ah;
        uint32_t base = (10u << 24) + (static_cast<uint32_t>(l) << 2);
        ah.SetBase(Ipv4Address(base), Ipv4Mask("255.255.255.252"));
        Ipv4InterfaceContainer ifs = ah.Assign(d);
        for (uint32_t e = 0; e < 2; ++e)
        {
            uint32_t n = e == 0 ? L.a : L.b;
            if (!hasAddr[n])
            {
                g_addr[n] = ifs.GetAddress(e);
                hasAddr[n] = true;
            }
        }
    }
    TrafficControlHelper none;
    for (auto& d : devs)
    {
        none.Uninstall(d);
    }
    std::vector<Ptr<QueueDisc>> qdiscs;
    std::vector<Ptr<PointToPointNetDevice>> pdevs;
    for (const PortSpec& p : ports)
    {
        Ptr<NetDevice> dev = devs.at(p.link).Get(p.dir);
        Ptr<PointToPointNetDevice> pd = DynamicCast<PointToPointNetDevice>(dev);
        pd->SetDataRate(DataRate(static_cast<uint64_t>(p.rate)));
        pdevs.push_back(pd);
        // the device queue holds one waiting packet while the device sends: the queue disc
        // gets the rest of the port's limit
        uint64_t qlimit = p.limit < 0 ? 100000000ULL : static_cast<uint64_t>(p.limit - 1);
        QueueSize qs(QueueSizeUnit::PACKETS, qlimit);
        TrafficControlHelper tch;
        if (p.kind == "fifo")
        {
            tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", QueueSizeValue(qs));
        }
        else if (p.kind == "red")
        {
            // DCTCP's step marking as ns-3's DCTCP example sets RED up, with MinTh = MaxTh:
            // the instantaneous queue (QW 1) against the threshold, marks instead of drops
            // for ECN-capable packets
            tch.SetRootQueueDisc("ns3::RedQueueDisc",
                                 "MaxSize",
                                 QueueSizeValue(qs),
                                 "MinTh",
                                 DoubleValue(p.k),
                                 "MaxTh",
                                 DoubleValue(p.k),
                                 "QW",
                                 DoubleValue(1.0),
                                 "UseEcn",
                                 BooleanValue(true),
                                 "UseHardDrop",
                                 BooleanValue(false),
                                 "Gentle",
                                 BooleanValue(false),
                                 "MeanPktSize",
                                 UintegerValue(1500),
                                 "LinkBandwidth",
                                 DataRateValue(DataRate(static_cast<uint64_t>(p.rate))),
                                 "LinkDelay",
                                 TimeValue(Seconds(links[p.link].delay)));
        }
        else
        {
            Fail("unknown queue kind " + p.kind);
        }
        QueueDiscContainer qc = tch.Install(dev);
        qdiscs.push_back(qc.Get(0));
    }
    g_qint.resize(ports.size());
    for (uint32_t i = 0; i < ports.size(); ++i)
    {
        qdiscs[i]->TraceConnectWithoutContext("PacketsInQueue", MakeBoundCallback(&QdiscLen, i));
        pdevs[i]->GetQueue()->TraceConnectWithoutContext("PacketsInQueue",
                                                         MakeBoundCallback(&DeviceLen, i));
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    // listeners first (one port per flow on its receiver), then the flows' starts
    std::map<uint32_t, uint32_t> nextPort;
    for (uint32_t i = 0; i < g_flows.size(); ++i)
    {
        FlowState& f = g_flows[i];
        uint32_t port = 1024 + nextPort[f.dst]++;
        if (port > 65535)
            Fail("more than 64,511 flows into one host");
        f.port = static_cast<uint16_t>(port);
        f.listen = NewSocket(f.dst, f);
        f.listen->Bind(InetSocketAddress(Ipv4Address::GetAny(), f.port));
        f.listen->Listen();
        f.listen->SetAcceptCallback(MakeCallback(&AcceptAll), MakeBoundCallback(&Accepted, i));
        if (f.size < 0)
            g_anyLong = true;
        else
            ++g_finiteLeft;
        if (f.group >= 0)
            ++g_groupLeft[f.group];
    }
    for (uint32_t i = 0; i < g_flows.size(); ++i)
    {
        FlowState& f = g_flows[i];
        if (f.after >= 0)
            g_waiters[f.after].push_back(i);
        else
            Simulator::Schedule(Seconds(f.start), &StartFlow, i);
    }
    for (uint32_t id : g_cwndFlows)
    {
        if (id >= g_flows.size())
            Fail("cwnd: no flow " + std::to_string(id));
    }
    if (g_cwndInterval > 0 && !g_cwndFlows.empty())
        Simulator::Schedule(Seconds(0), &SampleCwnd, 0);
    if (stop >= 0)
        Simulator::Stop(Seconds(stop));
    else if (g_finiteLeft == 0)
        Fail("no stop time and no sized flow: the run would not end");
    Simulator::Run();
    double now = Simulator::Now().GetSeconds();
    std::printf("T %.9f\n", now);
    for (const FlowState& f : g_flows)
    {
        std::printf("A %u %lld %llu %llu %llu\n",
                    f.id,
                    static_cast<long long>(f.rxBytes),
                    static_cast<unsigned long long>(f.retx),
                    static_cast<unsigned long long>(f.timeouts),
                    static_cast<unsigned long long>(f.dataPkts));
    }
    for (size_t i = 0; i < ports.size(); ++i)
    {
        const QueueDisc::Stats& st = qdiscs[i]->GetStats();
        Ptr<Queue<Packet>> dq = pdevs[i]->GetQueue();
        g_qint[i].Advance();
        std::printf("L %zu %u %llu %u %u %.9g\n",
                    i,
                    st.nTotalSentPackets,
                    static_cast<unsigned long long>(st.nTotalSentBytes),
                    st.nTotalDroppedPackets + dq->GetTotalDroppedPackets(),
                    st.nTotalMarkedPackets,
                    g_qint[i].sum);
    }
    std::fflush(stdout);
    Simulator::Destroy();
    return 0;
}
