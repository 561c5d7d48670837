package io.rocketpipe.interop;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * ACL 1.0 clients (AclClientRPCHook) against a broker with ACL on: a producer with the publishing
 * account sends n messages, a producer whose secret is wrong is refused, a lite pull consumer
 * with the subscribing account reads the n messages back, one with the publishing account reads
 * nothing. Args: namesrv topic group pubAk pubSk subAk subSk n timeoutSeconds.
 */
public final class AclScenario {
    public static void main(String[] args) throws Exception {
        String ns = args[0];
        String topic = args[1];
        String group = args[2];
        SessionCredentials pub = new SessionCredentials(args[3], args[4]);
        SessionCredentials sub = new SessionCredentials(args[5], args[6]);
        int n = Integer.parseInt(args[7]);
        long timeoutMs = Long.parseLong(args[8]) * 1000L;
        Map<String, Object> out = Json.obj();

        DefaultMQProducer p = producer(ns, group + "-pg", pub);
        try {
            List<Object> sent = Json.list();
            for (int i = 0; i < n; i++) {
                Message m = new Message(topic, "TagA", ("acl-" + i).getBytes(StandardCharsets.UTF_8));
                sent.add(Json.sendResult(p.send(m)));
            }
            out.put("sent", sent);
        } finally {
            p.shutdown();
        }

        DefaultMQProducer wrong = producer(ns, group + "-wrong", new SessionCredentials(args[3], "not-the-secret"));
        wrong.setRetryTimesWhenSendFailed(0);
        try {
            wrong.send(new Message(topic, "x".getBytes(StandardCharsets.UTF_8)));
            out.put("wrongSecret", "sent");
        } catch (MQBrokerException e) {
            out.put("wrongSecretCode", e.getResponseCode());
            out.put("wrongSecret", e.getErrorMessage());
        } catch (Exception e) {
            out.put("wrongSecret", Json.error(e));
        } finally {
            wrong.shutdown();
        }

        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group, new AclClientRPCHook(sub));
        c.setNamesrvAddr(ns);
        c.setInstanceName("interop-acl-" + System.nanoTime());
        c.setVipChannelEnabled(false);
        c.subscribe(topic, "*");
        c.start();
        List<Object> bodies = Json.list();
        try {
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (bodies.size() < n && System.currentTimeMillis() < deadline) {
                for (MessageExt m : c.poll(500)) {
                    bodies.add(new String(m.getBody(), StandardCharsets.UTF_8));
                }
            }
        } finally {
            c.shutdown();
        }
        out.put("polled", bodies);
        Json.print(out);
    }

    private static DefaultMQProducer producer(String ns, String group, SessionCredentials creds) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(group, new AclClientRPCHook(creds));
        p.setNamesrvAddr(ns);
        p.setInstanceName("interop-acl-" + System.nanoTime());
        p.setSendMsgTimeout(10000);
        p.setVipChannelEnabled(false);
        p.start();
        return p;
    }
}
