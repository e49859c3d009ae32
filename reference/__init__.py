"""Hourglass's reference model: RocketMQ's delay/retry contract as pure Python.

No I/O, no clock, no threads (its benchmark is ``harness.bench_model``). Each rule names in its
docstring the RocketMQ class and method it states; checked against tags ``rocketmq-all-4.9.8``
and ``rocketmq-all-5.3.3``. The catalogue:

| rule (module.function) | mirrors |
| --- | --- |
| ``levels.parse_level_table`` (grammar, errors) | ScheduleMessageService.parseDelayLevel (store/…/schedule in 4.9.x, broker/…/schedule in 5.x) |
| ``levels.DEFAULT_MESSAGE_DELAY_LEVEL`` | MessageStoreConfig.messageDelayLevel |
| ``levels.LevelTable.clamp`` | CommitLog.asyncPutMessage (4.9.x), HookUtils.transformDelayLevelMessage (5.x) |
| ``levels.LevelTable.delay_ms`` | ScheduleMessageService.computeDeliverTimestamp |
| ``windows.corrected_deliver_ms`` | DeliverDelayedMessageTimerTask.correctDeliverTimestamp |
| ``clock.BrokerClock.due_range`` (a stepped or drifting broker clock) | ScheduleMessageService.computeDeliverTimestamp / executeOnTimeup / correctDeliverTimestamp on the broker's wall clock |
| ``windows.window`` (ready + first delay) | ScheduleMessageService.start (FIRST_DELAY_TIME = 1000) |
| ``persistence.next_flush_ms`` | ScheduleMessageService.start (scheduleAtFixedRate(persist, 10000, flushDelayOffsetInterval)) |
| ``persistence`` graceful persist / kill -9 loss | ScheduleMessageService.shutdown / persist |
| ``persistence.corrected_delay_offset`` | ScheduleMessageService.correctDelayOffset |
| ``persistence.scheduler_duplicate_allowed`` | ScheduleMessageService.persist vs. updateOffset after a successful re-put |
| ``retry.requested_retry_level`` / ``retry_level`` | SendMessageProcessor.asyncConsumerSendMsgBack (delayLevel 0 → 3 + reconsumeTimes), clamped by CommitLog |
| ``retry.goes_to_dlq`` | SendMessageProcessor.asyncConsumerSendMsgBack (reconsumeTimes >= max, or delayLevel < 0) |
| ``retry.goes_to_dlq_on_resend`` | SendMessageProcessor.handleRetryAndDLQ (header reconsumeTimes >= max) |
| ``retry.send_back_route`` | DefaultMQPushConsumerImpl.sendMessageBack, ConsumeMessageConcurrentlyService.processConsumeResult / submitConsumeRequestLater (5000 ms) |
| ``network.send_back_failures`` / ``send_back_may_repeat`` (a send-back the client logged failed) | DefaultMQPushConsumerImpl.sendMessageBack (its ERROR line, then the re-send through the client's producer; the request given up on may still be stored) |
| ``profile.effective_max_reconsume_times`` | DefaultMQPushConsumerImpl.getMaxReconsumeTimes (-1 → 16), header value wins in asyncConsumerSendMsgBack |
| ``plans.plan_outcome`` | the DLQ rule of asyncConsumerSendMsgBack applied to a plan |
| ``plans.next_answer`` | ConsumeMessageConcurrentlyService + RemoteBrokerOffsetStore (redelivery after a consumer dies) |
| ``timer.rounded_deliver_ms`` / ``timer_ruling`` | HookUtils.checkIfTimerMessage / transformTimerMessage (5.x), MessageStoreConfig.timerPrecisionMs / timerMaxDelaySec |
| ``timer.broker_deliver_ms`` / ``send_ruling`` (TIMER_DELAY_SEC > TIMER_DELAY_MS > TIMER_DELIVER_MS, Java long wrap) | HookUtils.transformTimerMessage (5.x) |
| ``timer.timer_duplicate_allowed`` | TimerMessageStore.prepareTimerCheckPoint / shutdown / recover, TimerFlushService (timerFlushIntervalMs) |
| ``timer_axes`` | TimerMessageStore (wheel, roll-over at timerRollWindowSlot, checkpoint) at a stop |
| ``limits.body_refusal`` | Validators.checkMessage (client), MessageExtEncoder.encode (4.9.5+, 5.x) |
| ``persistence.flush_covers_reputs`` | ScheduleMessageService.persist vs. DeliverDelayedMessageTimerTask.executeOnTimeup's updateOffset |
| ``expected.rule_duplicate`` (consumer side) | RemoteBrokerOffsetStore.persistAll every ClientConfig.persistConsumerOffsetInterval (5 s) |
| ``expected.build_expected`` | all of the above, per message and attempt |
"""
