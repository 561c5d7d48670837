package io.rocketpipe.interop;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * ACL 1.0 clients (AclClientRPCHook) against a broker with ACL on: a producer with the publishing
 * account sends n messages; producers with a wrong secret, an unknown access key and the
 * subscribing account (no PUB) are refused; an admin client with the subscribing account is
 * refused an admin-only topic creation; a lite pull consumer with the subscribing account reads
 * the n messages back. Args: namesrv topic group pubAk pubSk subAk subSk n timeoutSeconds
 * brokerAddr noAdminTopic. Each refusal is reported as its response code and message.
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

        refusedSend(out, "wrongSecret", ns, group + "-wrong", new SessionCredentials(args[3], "not-the-secret"), topic);
        refusedSend(out, "unknownKey", ns, group + "-unknown", new SessionCredentials("stranger1", "whatever1"), topic);
        refusedSend(out, "noPub", ns, group + "-nopub", sub, topic);

        DefaultMQAdminExt admin = new DefaultMQAdminExt(new AclClientRPCHook(sub), 10000);
        admin.setNamesrvAddr(ns);
        admin.setInstanceName("interop-acl-admin-" + System.nanoTime());
        admin.start();
        try {
            admin.createAndUpdateTopicConfig(args[9], new TopicConfig(args[10], 1, 1, 6));
            out.put("adminOnly", "created");
        } catch (Exception e) {
            refusal(out, "adminOnly", e);
        } finally {
            admin.shutdown();
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

    /** A producer with {@code creds} (no retries) sends one message; reports what refused it under {@code key}. */
    private static void refusedSend(
            Map<String, Object> out, String key, String ns, String group, SessionCredentials creds, String topic)
            throws Exception {
        DefaultMQProducer p = producer(ns, group, creds);
        p.setRetryTimesWhenSendFailed(0);
        try {
            p.send(new Message(topic, "refused".getBytes(StandardCharsets.UTF_8)));
            out.put(key, "sent");
        } catch (Exception e) {
            refusal(out, key, e);
        } finally {
            p.shutdown();
        }
    }

    /**
     * The broker's refusal in {@code e} or its causes (the producer wraps a retried one in an
     * MQClientException): its response code under {@code key + "Code"} and its remark under
     * {@code key}; else the exception chain under {@code key}.
     */
    private static void refusal(Map<String, Object> out, String key, Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof MQBrokerException) {
                out.put(key + "Code", ((MQBrokerException) c).getResponseCode());
                out.put(key, ((MQBrokerException) c).getErrorMessage());
                return;
            }
        }
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof MQClientException && ((MQClientException) c).getResponseCode() > 0) {
                out.put(key + "Code", ((MQClientException) c).getResponseCode());
                out.put(key, ((MQClientException) c).getErrorMessage());
                return;
            }
        }
        out.put(key, Json.error(e));
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
