-- The database of the sample SQL tasks (data/intercode/sql_tasks.jsonl),
-- written for this project in the shape of InterCode's MySQL dumps.
CREATE DATABASE IF NOT EXISTS `library`;
USE `library`;

DROP TABLE IF EXISTS `author`;
CREATE TABLE `author` (
  `id` int NOT NULL,
  `name` text,
  `country` text,
  PRIMARY KEY (`id`)
);
INSERT INTO `author` VALUES (1,'Ursula K. Le Guin','USA'),(2,'Stanislaw Lem','Poland'),(3,'Octavia E. Butler','USA'),(4,'Italo Calvino','Italy');

DROP TABLE IF EXISTS `book`;
CREATE TABLE `book` (
  `id` int NOT NULL,
  `title` text,
  `author_id` int DEFAULT NULL,
  `year` int DEFAULT NULL,
  `pages` int DEFAULT NULL,
  PRIMARY KEY (`id`)
);
INSERT INTO `book` VALUES (1,'The Dispossessed',1,1974,387),(2,'Solaris',2,1961,204),(3,'Kindred',3,1979,264),(4,'Invisible Cities',4,1972,165),(5,'The Left Hand of Darkness',1,1969,304),(6,'The Cyberiad',2,1965,295),(7,'Parable of the Sower',3,1993,345);

DROP TABLE IF EXISTS `loan`;
CREATE TABLE `loan` (
  `book_id` int NOT NULL,
  `member` text,
  `days` int DEFAULT NULL
);
INSERT INTO `loan` VALUES (1,'ana',14),(2,'ben',7),(1,'chen',21),(5,'ana',10),(7,'dara',3);
