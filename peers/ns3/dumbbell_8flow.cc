// ns-3 reference benchmark: 8-flow dumbbell, 10 Gbps links, long-lived TCP.
//
// Mirrors fctlab's benchmark scenario dumbbell8_10g
// (python/fctlab/benchmarks/dumbbell8_10g.toml):
//
//   s0..s7 --10G/10us--> L ==10G/10us==> R --10G/10us--> r0..r7
//
// * every link: point-to-point, 10 Gbps, 10 us propagation delay
// * every port: DropTail device queue of 100 packets; the traffic-control
//   layer queue disc is uninstalled (see README.md)
// * TCP NewReno + SACK, MSS 1460 (1500-byte IP packets: no TCP timestamps),
//   min RTO 10 ms, initial cwnd 10 segments, DelAckCount 1, 4 MB buffers
// * 8 BulkSendApplication flows s_i -> r_i, MaxBytes 0, start at t = 0
// * simulated for 1 s
//
// Prints one result line:
//   ns3 dumbbell8_10g: sim_s=... wall_s=... data_pkts=... pkts_per_wall_s=...
//   goodput_gbps=... peak_rss_mb=...
// wall_s is the wall-clock time of Simulator::Run() alone.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

using namespace ns3;

int
main(int argc, char* argv[])
{
    uint32_t nFlows = 8;
    double simSeconds = 1.0;
    std::string rate = "10Gbps";
    std::string delay = "10us";
    uint32_t queuePkts = 100;
    uint32_t mss = 1460;
    uint32_t sendSize = 1460;
    uint32_t bufBytes = 4 * 1024 * 1024;
    std::string recovery = "prr";
    bool verbose = false;

    CommandLine cmd(__FILE__);
    cmd.AddValue("flows", "number of sender/receiver pairs", nFlows);
    cmd.AddValue("simTime", "simulated time in seconds", simSeconds);
    cmd.AddValue("rate", "link rate of every link", rate);
    cmd.AddValue("delay", "propagation delay of every link", delay);
    cmd.AddValue("queue", "device queue size in packets at every port", queuePkts);
    cmd.AddValue("mss", "TCP segment size (payload bytes)", mss);
    cmd.AddValue("sendSize", "BulkSendApplication write size in bytes", sendSize);
    cmd.AddValue("buf", "TCP send/receive buffer size in bytes", bufBytes);
    cmd.AddValue("recovery",
                 "loss recovery: prr (ns-3 default, RFC 6937) or classic (RFC 5681/6582)",
                 recovery);
    cmd.AddValue("verbose", "print per-flow results and drop counts", verbose);
    cmd.Parse(argc, argv);

    // ---- TCP configuration (must precede stack installation) ----
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    if (recovery == "classic")
    {
        Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                           TypeIdValue(TcpClassicRecovery::GetTypeId()));
    }
    else if (recovery != "prr")
    {
        std::fprintf(stderr, "unknown --recovery=%s (use prr or classic)\n", recovery.c_str());
        return 2;
    }
    // No timestamp option: data packets are 20 (IP) + 20 (TCP) + 1460 = 1500 bytes.
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(10)));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(bufBytes));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(bufBytes));

    // ---- Topology ----
    NodeContainer senders;
    NodeContainer receivers;
    NodeContainer routers; // 0 = left switch, 1 = right switch
    senders.Create(nFlows);
    receivers.Create(nFlows);
    routers.Create(2);

    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", StringValue(rate));
    p2p.SetChannelAttribute("Delay", StringValue(delay));
    p2p.SetQueue("ns3::DropTailQueue<Packet>",
                 "MaxSize",
                 QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, queuePkts)));

    InternetStackHelper stack;
    stack.Install(senders);
    stack.Install(receivers);
    stack.Install(routers);

    std::vector<NetDeviceContainer> allDevs;
    std::vector<NetDeviceContainer> senderLinks(nFlows);
    std::vector<NetDeviceContainer> receiverLinks(nFlows);
    for (uint32_t i = 0; i < nFlows; ++i)
    {
        senderLinks[i] = p2p.Install(senders.Get(i), routers.Get(0));
        receiverLinks[i] = p2p.Install(routers.Get(1), receivers.Get(i));
        allDevs.push_back(senderLinks[i]);
        allDevs.push_back(receiverLinks[i]);
    }
    NetDeviceContainer bottleneck = p2p.Install(routers.Get(0), routers.Get(1));
    allDevs.push_back(bottleneck);

    Ipv4AddressHelper addr;
    std::vector<Ipv4InterfaceContainer> receiverIfs(nFlows);
    for (uint32_t i = 0; i < nFlows; ++i)
    {
        addr.SetBase(Ipv4Address(("10.1." + std::to_string(i) + ".0").c_str()), "255.255.255.0");
        addr.Assign(senderLinks[i]);
        addr.SetBase(Ipv4Address(("10.2." + std::to_string(i) + ".0").c_str()), "255.255.255.0");
        receiverIfs[i] = addr.Assign(receiverLinks[i]);
    }
    addr.SetBase("10.3.0.0", "255.255.255.0");
    addr.Assign(bottleneck);

    // Ipv4AddressHelper::Assign installs a default root queue disc (FqCoDel)
    // on every device. Remove it so the only queue at each port is the
    // 100-packet DropTail device queue.
    TrafficControlHelper tch;
    for (auto& devs : allDevs)
    {
        tch.Uninstall(devs);
    }

    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    // ---- Applications ----
    const uint16_t port = 5000;
    std::vector<Ptr<PacketSink>> sinks;
    ApplicationContainer sinkApps;
    ApplicationContainer srcApps;
    for (uint32_t i = 0; i < nFlows; ++i)
    {
        PacketSinkHelper sinkHelper("ns3::TcpSocketFactory",
                                    InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer s = sinkHelper.Install(receivers.Get(i));
        sinks.push_back(DynamicCast<PacketSink>(s.Get(0)));
        sinkApps.Add(s);

        // receiverIfs[i] holds (right switch, receiver); index 1 is the receiver.
        BulkSendHelper src("ns3::TcpSocketFactory",
                           InetSocketAddress(receiverIfs[i].GetAddress(1), port));
        src.SetAttribute("MaxBytes", UintegerValue(0));
        src.SetAttribute("SendSize", UintegerValue(sendSize));
        srcApps.Add(src.Install(senders.Get(i)));
    }
    sinkApps.Start(Seconds(0.0));
    srcApps.Start(Seconds(0.0));

    // Drop accounting (device queue drops + drops at the traffic-control layer
    // when a device queue is stopped), for --verbose.
    uint64_t drops = 0;
    if (verbose)
    {
        for (auto& devs : allDevs)
        {
            for (uint32_t d = 0; d < devs.GetN(); ++d)
            {
                auto dev = DynamicCast<PointToPointNetDevice>(devs.Get(d));
                dev->GetQueue()->TraceConnectWithoutContext(
                    "Drop",
                    MakeBoundCallback(+[](uint64_t* c, Ptr<const Packet>) { ++*c; }, &drops));
            }
        }
        Config::ConnectWithoutContext(
            "/NodeList/*/$ns3::TrafficControlLayer/TcDrop",
            MakeBoundCallback(+[](uint64_t* c, Ptr<const Packet>) { ++*c; }, &drops));
    }

    Simulator::Stop(Seconds(simSeconds));

    auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    auto t1 = std::chrono::steady_clock::now();
    double wall = std::chrono::duration<double>(t1 - t0).count();
    uint64_t events = Simulator::GetEventCount();

    uint64_t rxBytes = 0;
    for (uint32_t i = 0; i < nFlows; ++i)
    {
        uint64_t b = sinks[i]->GetTotalRx();
        rxBytes += b;
        if (verbose)
        {
            std::printf("flow %u: rx_bytes=%llu goodput_gbps=%.4f\n",
                        i,
                        static_cast<unsigned long long>(b),
                        b * 8.0 / simSeconds / 1e9);
        }
    }
    if (verbose)
    {
        std::printf("queue_drops=%llu events=%llu events_per_wall_s=%.0f\n",
                    static_cast<unsigned long long>(drops),
                    static_cast<unsigned long long>(events),
                    wall > 0 ? events / wall : 0.0);
    }

    Simulator::Destroy();

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double peakRssMb = ru.ru_maxrss / 1024.0; // ru_maxrss is in KiB on Linux

    uint64_t dataPkts = rxBytes / mss;
    double goodputGbps = rxBytes * 8.0 / simSeconds / 1e9;
    // "1.0" for whole seconds (the documented format), shortest form otherwise.
    char simStr[32];
    std::snprintf(simStr,
                  sizeof(simStr),
                  simSeconds == std::floor(simSeconds) ? "%.1f" : "%g",
                  simSeconds);
    std::printf("ns3 dumbbell8_10g: sim_s=%s wall_s=%.3f data_pkts=%llu pkts_per_wall_s=%.0f "
                "goodput_gbps=%.3f peak_rss_mb=%.1f\n",
                simStr,
                wall,
                static_cast<unsigned long long>(dataPkts),
                wall > 0 ? dataPkts / wall : 0.0,
                goodputGbps,
                peakRssMb);
    return 0;
}
