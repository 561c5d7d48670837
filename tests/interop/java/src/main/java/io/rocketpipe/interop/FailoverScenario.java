package io.rocketpipe.interop;

import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.latency.LatencyFaultTolerance;
import org.apache.rocketmq.client.latency.MQFaultStrategy;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

/**
 * DefaultMQProducer with sendLatencyFaultEnable=true while one broker group dies under it.
 * Args: namesrv topic group count deadBroker syncDir. Sends count messages synchronously (the
 * route now lists both brokers), creates syncDir/sent, waits (at most 60 s) for syncDir/go — the
 * test kills deadBroker in between, so the client's cached route still lists it — then sends
 * count more. Prints each send of the second round (broker and status, or its error) and
 * whether the client's own fault table (MQFaultStrategy.latencyFaultTolerance, read by
 * reflection: the field exists in 4.9.x and 5.x) holds the dead broker as not available.
 */
public final class FailoverScenario {
    public static void main(String[] args) throws Exception {
        String ns = args[0];
        String topic = args[1];
        String group = args[2];
        int n = Integer.parseInt(args[3]);
        String dead = args[4];
        java.nio.file.Path sync = java.nio.file.Paths.get(args[5]);
        DefaultMQProducer p = new DefaultMQProducer(group);
        p.setNamesrvAddr(ns);
        p.setInstanceName("interop-" + System.nanoTime());
        p.setSendMsgTimeout(5000);
        p.setVipChannelEnabled(false);
        p.setSendLatencyFaultEnable(true);
        p.start();
        Map<String, Object> out = Json.obj();
        try {
            List<Object> before = Json.list();
            for (int i = 0; i < n; i++) {
                SendResult r = p.send(new Message(topic, "Tag", ("before-" + i).getBytes(StandardCharsets.UTF_8)));
                before.add(r.getMessageQueue().getBrokerName());
            }
            out.put("before", before);
            java.nio.file.Files.createFile(sync.resolve("sent"));
            long deadline = System.currentTimeMillis() + 60000;
            while (!java.nio.file.Files.exists(sync.resolve("go"))) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("no go file after 60 s");
                }
                Thread.sleep(20);
            }
            List<Object> sends = Json.list();
            for (int i = 0; i < n; i++) {
                Map<String, Object> one = Json.obj();
                long t0 = System.currentTimeMillis();
                try {
                    SendResult r = p.send(new Message(topic, "Tag", ("failover-" + i).getBytes(StandardCharsets.UTF_8)));
                    one.put("broker", r.getMessageQueue().getBrokerName());
                    one.put("status", r.getSendStatus().name());
                } catch (Exception e) {
                    one.put("error", String.valueOf(e));
                }
                one.put("ms", System.currentTimeMillis() - t0);
                sends.add(one);
            }
            out.put("sends", sends);
            MQFaultStrategy strategy = faultStrategy(p);
            Field f = MQFaultStrategy.class.getDeclaredField("latencyFaultTolerance");
            f.setAccessible(true);
            @SuppressWarnings("unchecked")
            LatencyFaultTolerance<String> table = (LatencyFaultTolerance<String>) f.get(strategy);
            out.put("dead_available", table.isAvailable(dead));
        } finally {
            p.shutdown();
        }
        System.out.println(Json.write(out));
    }

    private static MQFaultStrategy faultStrategy(DefaultMQProducer p) throws Exception {
        Object impl = p.getDefaultMQProducerImpl();
        Field f = impl.getClass().getDeclaredField("mqFaultStrategy");
        f.setAccessible(true);
        return (MQFaultStrategy) f.get(impl);
    }
}
